package auth

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// File is the security file: {"users":[...],"roles":[...]}.
type File struct {
	Users []User `json:"users"`
	Roles []Role `json:"roles"`
}

// User is one user: a name, a bcrypt hash of the password, roles.
type User struct {
	Name     string   `json:"name"`
	Password string   `json:"password"`
	Roles    []string `json:"roles"`
}

// Role names a set of permissions.
type Role struct {
	Name        string   `json:"name"`
	Permissions []string `json:"permissions"`
}

// Errors of authentication.
var (
	// ErrUnauthenticated: no credentials, or wrong ones (401).
	ErrUnauthenticated = errors.New("authentication required")
	// ErrForbidden: authenticated, without the permission (403).
	ErrForbidden = errors.New("permission denied")
	// ErrThrottled: too many failed logins from this client (429).
	ErrThrottled = errors.New("too many failed logins")
)

// Permission is RESOURCE:OPERATION[:REGION[:KEY]]; "*" in any part of a
// granted permission matches anything, and a granted permission without a
// region (or key) covers every region (or key).
type Permission struct {
	Resource, Operation, Region, Key string
}

// ParsePermission reads RESOURCE:OPERATION[:REGION[:KEY]].
func ParsePermission(s string) (Permission, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 4 {
		return Permission{}, fmt.Errorf("permission %q: want RESOURCE:OPERATION[:REGION[:KEY]]", s)
	}
	for _, p := range parts {
		if p == "" {
			return Permission{}, fmt.Errorf("permission %q has an empty part", s)
		}
	}
	p := Permission{Resource: parts[0], Operation: parts[1]}
	switch p.Resource {
	case "DATA", "CLUSTER", "*":
	default:
		return Permission{}, fmt.Errorf("permission %q: the resource is DATA or CLUSTER", s)
	}
	switch p.Operation {
	case "READ", "WRITE", "MANAGE", "*":
	default:
		return Permission{}, fmt.Errorf("permission %q: the operation is READ, WRITE or MANAGE", s)
	}
	if len(parts) > 2 {
		p.Region = parts[2]
	}
	if len(parts) > 3 {
		p.Key = parts[3]
	}
	return p, nil
}

// MustPermission parses a permission written in code.
func MustPermission(s string) Permission {
	p, err := ParsePermission(s)
	if err != nil {
		panic(err)
	}
	return p
}

func (p Permission) String() string {
	s := p.Resource + ":" + p.Operation
	if p.Region != "" {
		s += ":" + p.Region
		if p.Key != "" {
			s += ":" + p.Key
		}
	}
	return s
}

// Implies reports whether holding p grants need.
func (p Permission) Implies(need Permission) bool {
	match := func(granted, needed string) bool {
		return granted == "" || granted == "*" || granted == needed
	}
	if p.Resource != "*" && p.Resource != need.Resource || p.Operation != "*" && p.Operation != need.Operation {
		return false
	}
	// A permission naming a region does not grant one that names none
	// (listing every region needs DATA:READ without a region).
	if p.Region != "" && p.Region != "*" && need.Region == "" {
		return false
	}
	if p.Key != "" && p.Key != "*" && need.Key == "" {
		return false
	}
	return match(p.Region, need.Region) && match(p.Key, need.Key)
}

// Principal is an authenticated user and what it may do.
type Principal struct {
	Name        string
	Permissions []Permission
}

// Can reports whether the principal holds a permission implying need.
func (pr *Principal) Can(need Permission) bool {
	for _, p := range pr.Permissions {
		if p.Implies(need) {
			return true
		}
	}
	return false
}

// Parse reads and checks a security file: every user has a bcrypt hash
// and known roles, every permission parses, names are unique.
func Parse(r io.Reader) (*File, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("security file: %w", err)
	}
	roles := map[string]bool{}
	for _, r := range f.Roles {
		if r.Name == "" || roles[r.Name] {
			return nil, fmt.Errorf("security file: role %q is unnamed or defined twice", r.Name)
		}
		roles[r.Name] = true
		for _, p := range r.Permissions {
			if _, err := ParsePermission(p); err != nil {
				return nil, fmt.Errorf("security file: role %s: %w", r.Name, err)
			}
		}
	}
	users := map[string]bool{}
	for _, u := range f.Users {
		if u.Name == "" || users[u.Name] || strings.Contains(u.Name, ":") {
			return nil, fmt.Errorf("security file: user %q is unnamed, defined twice or contains ':'", u.Name)
		}
		users[u.Name] = true
		if _, err := bcrypt.Cost([]byte(u.Password)); err != nil {
			return nil, fmt.Errorf("security file: user %s: the password must be a bcrypt hash (kvnode hash-password makes one): %v", u.Name, err)
		}
		for _, r := range u.Roles {
			if !roles[r] {
				return nil, fmt.Errorf("security file: user %s has the unknown role %q", u.Name, r)
			}
		}
	}
	return &f, nil
}

// HashPassword returns the bcrypt hash of a password, for the file.
func HashPassword(password []byte) (string, error) {
	password = bytes.TrimRight(password, "\r\n")
	if len(password) == 0 {
		return "", errors.New("the password is empty")
	}
	h, err := bcrypt.GenerateFromPassword(password, bcrypt.DefaultCost)
	if err != nil {
		return "", err
	}
	return string(h), nil
}

// account is a user ready to authenticate.
type account struct {
	hash      []byte
	principal *Principal
	verified  atomic.Pointer[[32]byte] // SHA-256 of the last password that verified
}

// users is one loaded security file.
type users struct {
	byName map[string]*account
}

func compile(f *File) *users {
	perms := map[string][]Permission{}
	for _, r := range f.Roles {
		for _, p := range r.Permissions {
			perms[r.Name] = append(perms[r.Name], MustPermission(p))
		}
	}
	u := &users{byName: map[string]*account{}}
	for _, usr := range f.Users {
		pr := &Principal{Name: usr.Name}
		for _, r := range usr.Roles {
			pr.Permissions = append(pr.Permissions, perms[r]...)
		}
		u.byName[usr.Name] = &account{hash: []byte(usr.Password), principal: pr}
	}
	return u
}

// Authenticator checks credentials against the loaded security file. It
// is safe for concurrent use; Reload swaps the file atomically.
type Authenticator struct {
	path    string
	current atomic.Pointer[users]
	limiter *limiter
	dummy   []byte // a bcrypt hash checked for unknown users, so they cost the same
}

// Load reads the security file at path.
func Load(path string) (*Authenticator, error) {
	a := &Authenticator{path: path, limiter: newLimiter(10, time.Minute, failingClients, time.Now)}
	dummy, err := bcrypt.GenerateFromPassword([]byte("kvnode-unknown-user"), bcrypt.DefaultCost)
	if err != nil {
		return nil, err
	}
	a.dummy = dummy
	if err := a.Reload(); err != nil {
		return nil, err
	}
	return a, nil
}

// New returns an Authenticator over a parsed file (no path to reload).
func New(f *File) *Authenticator {
	a := &Authenticator{limiter: newLimiter(10, time.Minute, failingClients, time.Now)}
	a.dummy, _ = bcrypt.GenerateFromPassword([]byte("kvnode-unknown-user"), bcrypt.MinCost)
	a.current.Store(compile(f))
	return a
}

// SetFailureLimit changes how many failed logins a client may make per
// window before it is refused for the rest of the window (default 10 per
// minute).
func (a *Authenticator) SetFailureLimit(max int, per time.Duration) {
	a.limiter = newLimiter(max, per, failingClients, time.Now)
}

// Reload reads the file again; on any error the loaded one stays in force.
func (a *Authenticator) Reload() error {
	if a.path == "" {
		return errors.New("no security file to reload")
	}
	fh, err := os.Open(a.path)
	if err != nil {
		return fmt.Errorf("security file: %w", err)
	}
	defer fh.Close()
	f, err := Parse(fh)
	if err != nil {
		return fmt.Errorf("%s: %w", a.path, err)
	}
	a.current.Store(compile(f))
	return nil
}

// Authenticate checks a user name and password from client (an address,
// for the failed-login limit) and returns the principal.
func (a *Authenticator) Authenticate(client, name, password string) (*Principal, error) {
	if retry, ok := a.limiter.allow(client); !ok {
		return nil, &ThrottledError{Client: client, RetryAfter: retry}
	}
	acc := a.current.Load().byName[name]
	sum := sha256.Sum256([]byte(password))
	if acc != nil {
		if v := acc.verified.Load(); v != nil && subtle.ConstantTimeCompare(v[:], sum[:]) == 1 {
			return acc.principal, nil
		}
		if bcrypt.CompareHashAndPassword(acc.hash, []byte(password)) == nil {
			acc.verified.Store(&sum)
			return acc.principal, nil
		}
	} else {
		_ = bcrypt.CompareHashAndPassword(a.dummy, []byte(password))
	}
	a.limiter.fail(client)
	return nil, fmt.Errorf("%w: wrong user name or password", ErrUnauthenticated)
}
