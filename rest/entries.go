package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/kvnode/kvnode/region"
	"github.com/kvnode/kvnode/rest/input"
	"github.com/kvnode/kvnode/rest/jsonout"
	"github.com/kvnode/kvnode/rest/liststream"
	"github.com/kvnode/kvnode/rest/routing"
)

// The handlers of /kv/v1: regions and their entries. Each parses and checks
// the request, makes one Store call and writes the answer; errors go to
// handleError, except conflicts, whose answer carries the current value.

// listRegions is GET /kv/v1: {"regions":[{"name":..,"type":..}]}.
func (s *Server) listRegions(c echo.Context) error {
	cons, err := consistency(c)
	if err != nil {
		return err
	}
	infos, err := s.store.Regions(c.Request().Context(), cons)
	if err != nil {
		return err
	}
	if infos == nil {
		infos = []region.Info{}
	}
	return writeDoc(c, http.StatusOK, struct {
		Regions []region.Info `json:"regions"`
	}{infos})
}

// listEntries is GET /kv/v1/{region}?limit=: {"<region>":[values]} in key
// order, streamed (package liststream), with Content-Location naming the keys of the
// values in order when that URL is one this server would accept
// (MaxURLBytes); see the package doc for why a longer one is left out. When
// no value is returned there is no key list to name, and so no
// Content-Location.
func (s *Server) listEntries(c echo.Context) error {
	name, err := pathParam(c, "region")
	if err != nil {
		return err
	}
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	cons, err := consistency(c)
	if err != nil {
		return err
	}
	quoted, err := jsonout.Marshal(name)
	if err != nil {
		return err
	}
	ls, err := s.store.OpenList(c.Request().Context(), cons, name, region.ListOptions{Limit: limit, PeekBytes: MaxURLBytes})
	if err != nil {
		return err
	}
	defer ls.Close()
	if loc, ok := listLocation(c, name, ls); ok {
		c.Response().Header().Set(headerContentLocation, loc)
	}
	open := append(append([]byte{'{'}, quoted...), ':', '[')
	liststream.Write(c.Response(), c.Request(), s.log, contentTypeJSON, ls, open, jsonout.WriteValue, requestID(c))
	return nil
}

// listLocation is the Content-Location of a listing: <base>/kv/v1/{region}/
// followed by its keys, when the listing has keys and that path fits in
// MaxURLBytes. The listing's peek holds every key then (its keys' lengths
// are a lower bound of their escaped lengths).
func listLocation(c echo.Context, name string, ls region.Listing) (string, bool) {
	keys, all := ls.Peek()
	if !all || len(keys) == 0 {
		return "", false
	}
	loc := entryURL(c, name, keys...)
	if len(loc)-len(baseURL(c)) > MaxURLBytes {
		return "", false
	}
	return loc, true
}

// countEntries is HEAD /kv/v1/{region}: the size in Resource-Count.
func (s *Server) countEntries(c echo.Context) error {
	name, err := pathParam(c, "region")
	if err != nil {
		return err
	}
	cons, err := consistency(c)
	if err != nil {
		return err
	}
	n, err := s.store.Count(c.Request().Context(), cons, name)
	if err != nil {
		return err
	}
	c.Response().Header().Set(headerResourceCount, strconv.Itoa(n))
	return c.NoContent(http.StatusOK)
}

// listKeys is GET /kv/v1/{region}/keys: {"keys":[...]}, streamed
// (package liststream), with Geode's Location: <base>/kv/v1/{region}/keys.
func (s *Server) listKeys(c echo.Context) error {
	name, err := pathParam(c, "region")
	if err != nil {
		return err
	}
	cons, err := consistency(c)
	if err != nil {
		return err
	}
	ls, err := s.store.OpenList(c.Request().Context(), cons, name, region.ListOptions{Limit: -1, KeysOnly: true})
	if err != nil {
		return err
	}
	defer ls.Close()
	c.Response().Header().Set(echo.HeaderLocation, keysURL(c, name))
	liststream.Write(c.Response(), c.Request(), s.log, contentTypeJSON, ls, []byte(`{"keys":[`), jsonout.NewKeyWriter().Write, requestID(c))
	return nil
}

// keysURL is <base>/kv/v1/{region}/keys.
func keysURL(c echo.Context, regionName string) string {
	return kvBase(c) + "/" + url.PathEscape(regionName) + "/keys"
}

// getEntries is GET /kv/v1/{region}/{key} (the stored object; a missing key
// is 404) and GET /kv/v1/{region}/k1,k2 ({"<region>":[v1,v2]} in request
// order; a missing key is 400 unless ?ignoreMissingKey=true, then null).
func (s *Server) getEntries(c echo.Context) error {
	name, err := pathParam(c, "region")
	if err != nil {
		return err
	}
	keys, err := pathKeys(c)
	if err != nil {
		return err
	}
	ignoreMissing, err := ignoreMissingKeyParam(c)
	if err != nil {
		return err
	}
	cons, err := consistency(c)
	if err != nil {
		return err
	}
	values, err := s.store.Get(c.Request().Context(), cons, name, keys)
	if err != nil {
		return err
	}
	if len(values) != len(keys) {
		return fmt.Errorf("store returned %d values for %d keys", len(values), len(keys))
	}
	c.Response().Header().Set(headerContentLocation, entryURL(c, name, keys...))
	if len(keys) == 1 {
		if values[0] == nil {
			return fmt.Errorf("key %q in region %q: %w", keys[0], name, region.ErrKeyNotFound)
		}
		return writeJSON(c, http.StatusOK, values[0])
	}
	if !ignoreMissing {
		for i, v := range values {
			if v == nil {
				return fmt.Errorf("key %q in region %q: %w", keys[i], name, region.ErrKeyAbsent)
			}
		}
	}
	body, err := jsonout.RegionValues(name, values)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, body)
}

// createEntry is POST /kv/v1/{region}[?key=K][&ttl=SECONDS]: put-if-absent. 201 with the
// entry's Location; when the key exists, 409 with its Location and value.
// Without ?key the store generates a key.
func (s *Server) createEntry(c echo.Context) error {
	name, err := pathParam(c, "region")
	if err != nil {
		return err
	}
	key, given := queryParam(c, "key")
	if given {
		if err := region.ValidateKey(key); err != nil {
			return fmt.Errorf("?key=: %w", err)
		}
	}
	ttl, err := ttlParam(c)
	if err != nil {
		return err
	}
	body, err := s.readJSONBody(c)
	if err != nil {
		return err
	}
	value, err := region.NormalizeValue(body)
	if err != nil {
		return err
	}
	key, err = s.store.PutIfAbsent(c.Request().Context(), name, region.Entry{Key: key, Value: value}, ttl)
	if err != nil {
		return s.conflict(c, name, routing.SingleWrite(err, 1))
	}
	c.Response().Header().Set(echo.HeaderLocation, entryURL(c, name, key))
	return c.NoContent(http.StatusCreated)
}

// putEntries is PUT /kv/v1/{region}/{keys}[?op=PUT|REPLACE|CAS][&ttl=SECONDS],
// single- or multi-key. A multi-key body is a JSON array with element i for key i.
func (s *Server) putEntries(c echo.Context) error {
	name, err := pathParam(c, "region")
	if err != nil {
		return err
	}
	keys, err := pathKeys(c)
	if err != nil {
		return err
	}
	op, err := opParam(c)
	if err != nil {
		return err
	}
	ttl, err := ttlParam(c)
	if err != nil {
		return err
	}
	if err := input.CheckWriteKeys(keys); err != nil {
		return err
	}
	body, err := s.readJSONBody(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if op == input.OpCAS {
		elems := []json.RawMessage{body}
		if len(keys) > 1 {
			if elems, err = input.ParseArray(body, len(keys)); err != nil {
				return err
			}
		}
		pairs := make([]region.CASPair, len(keys))
		for i, k := range keys {
			oldV, newV, err := input.ParseCASPair(elems[i])
			if err != nil {
				return input.WithElement(err, keys, i)
			}
			pairs[i] = region.CASPair{Key: k, Old: oldV, New: newV}
		}
		if err := s.store.CAS(ctx, name, pairs, ttl); err != nil {
			return s.conflict(c, name, routing.SingleWrite(err, len(keys)))
		}
		return c.NoContent(http.StatusOK)
	}
	entries, err := input.Entries(body, keys)
	if err != nil {
		return err
	}
	if op == input.OpReplace {
		err = s.store.Replace(ctx, name, entries, ttl)
	} else {
		err = s.store.Put(ctx, name, entries, ttl)
	}
	if err != nil {
		return routing.SingleWrite(err, len(keys))
	}
	return c.NoContent(http.StatusOK)
}

// conflict answers a *region.ConflictError as Geode does: 409, Location of
// the conflicting entry and its current value as the body. Any other error
// goes to handleError.
func (s *Server) conflict(c echo.Context, name string, err error) error {
	var ce *region.ConflictError
	if !errors.As(err, &ce) || ce.Current == nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, entryURL(c, name, ce.Key))
	return writeJSON(c, http.StatusConflict, ce.Current)
}

// deleteEntries is DELETE /kv/v1/{region}/k1[,k2...]: all or nothing; any
// missing key is 404 and nothing is deleted.
func (s *Server) deleteEntries(c echo.Context) error {
	name, err := pathParam(c, "region")
	if err != nil {
		return err
	}
	keys, err := pathKeys(c)
	if err != nil {
		return err
	}
	if err := input.CheckWriteKeys(keys); err != nil {
		return err
	}
	if err := s.store.Delete(c.Request().Context(), name, keys); err != nil {
		return routing.SingleWrite(err, len(keys))
	}
	return c.NoContent(http.StatusOK)
}

// clearRegion is DELETE /kv/v1/{region}: removes every entry of a
// replicated region; a partitioned region answers 405 (ErrNotSupported).
func (s *Server) clearRegion(c echo.Context) error {
	name, err := pathParam(c, "region")
	if err != nil {
		return err
	}
	if err := s.store.Clear(c.Request().Context(), name); err != nil {
		return err
	}
	return c.NoContent(http.StatusOK)
}
