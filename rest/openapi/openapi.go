package openapi

import (
	_ "embed"
	"net/http"

	"github.com/swaggest/swgui"
	"github.com/swaggest/swgui/v5emb"
)

//go:embed openapi.json
var document []byte

// Document is the OpenAPI 3 document of the API, as JSON. The caller must
// not modify it.
func Document() []byte { return document }

// SwaggerUI serves Swagger UI under basePath (e.g. /docs/): its page at
// basePath and its assets below it, all embedded in the binary, showing
// the document at specURL. Its "Try it out" calls the API from the
// browser as any client does, with the credentials given to its
// "Authorize" button when security is on.
func SwaggerUI(basePath, specURL string) http.Handler {
	return v5emb.NewHandlerWithConfig(swgui.Config{
		Title:       "kvnode REST API",
		SwaggerJSON: specURL,
		BasePath:    basePath,
		// Show the models of the bodies, which the API's reference needs
		// (swgui hides them by default).
		SettingsUI: map[string]string{"defaultModelsExpandDepth": "1"},
	})
}
