package middleware

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/labstack/echo/v4"
)

// Recover turns a panicking handler into an error (a 500 with a JSON
// cause, by the server's error handler) naming the panic only when its
// value is an error or a string. The stack goes to logger, never to the
// client.
func Recover(logger *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) (err error) {
			defer func() {
				r := recover()
				if r == nil {
					return
				}
				if r == http.ErrAbortHandler {
					// net/http's way to abort a response on purpose; let it do so.
					panic(r)
				}
				logger.Error("handler panicked", "method", c.Request().Method,
					"path", c.Request().URL.EscapedPath(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()),
					slog.String("request_id", RequestIDOf(c)))
				err = &panicError{value: r}
			}()
			return next(c)
		}
	}
}

// panicError is what a recovered panic becomes. Its message names the panic
// only when the value is an error or a string, which cannot carry memory
// addresses the way an arbitrary value printed with %v can.
type panicError struct{ value any }

func (p *panicError) Error() string {
	switch v := p.value.(type) {
	case error:
		return "internal error: handler panicked: " + v.Error()
	case string:
		return "internal error: handler panicked: " + v
	}
	return "internal error: handler panicked"
}
