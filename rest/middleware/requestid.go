package middleware

import (
	"crypto/rand"

	"github.com/labstack/echo/v4"
)

// MaxRequestIDLen is the longest X-Request-ID kept from a client; a longer
// one is replaced, so that a client cannot fill the logs through it.
const MaxRequestIDLen = 128

// requestIDKey is where the request's ID waits in the Echo context.
const requestIDKey = "kvnode.requestID"

// RequestID gives every request an ID: the client's X-Request-ID when it
// is 1 to MaxRequestIDLen visible ASCII characters (no spaces, no control
// characters, nothing a log line could be forged with), else a new random
// one. The answer carries it in X-Request-ID, whatever its status. Put it
// first, before anything that can answer.
func RequestID() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			id := c.Request().Header.Get(echo.HeaderXRequestID)
			if !validRequestID(id) {
				id = rand.Text() // 26 characters of base32: 130 random bits
			}
			c.Set(requestIDKey, id)
			c.Response().Header().Set(echo.HeaderXRequestID, id)
			return next(c)
		}
	}
}

// RequestIDOf is the request's ID ("" before RequestID ran).
func RequestIDOf(c echo.Context) string {
	id, _ := c.Get(requestIDKey).(string)
	return id
}

// validRequestID: 1 to MaxRequestIDLen bytes from '!' to '~'.
func validRequestID(id string) bool {
	if id == "" || len(id) > MaxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < '!' || id[i] > '~' {
			return false
		}
	}
	return true
}
