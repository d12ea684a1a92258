package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// Credential is what one sign-in leaves behind.
type Credential struct {
	// AccessToken is the short-lived token sent with each call: the Copilot
	// token for github-copilot, the OAuth access token for openai-codex.
	AccessToken string `json:"accessToken,omitempty"`
	// ExpiresAt is when AccessToken stops working; zero means unknown.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// RefreshToken renews AccessToken: the GitHub OAuth token for
	// github-copilot, the OAuth refresh token for openai-codex.
	RefreshToken string `json:"refreshToken,omitempty"`
	// IDToken is the OpenID Connect id_token (openai-codex).
	IDToken string `json:"idToken,omitempty"`
	// AccountID is the ChatGPT account id from the id_token (openai-codex).
	AccountID string `json:"accountId,omitempty"`
	// Endpoint is the API endpoint the service assigned (Copilot's
	// endpoints.api); empty means the configured apiBase.
	Endpoint string `json:"endpoint,omitempty"`
	// SignedInAt and RefreshedAt are for nanobot status.
	SignedInAt  time.Time `json:"signedInAt,omitzero"`
	RefreshedAt time.Time `json:"refreshedAt,omitzero"`
}

func (c Credential) secrets() []string {
	return []string{c.AccessToken, c.RefreshToken, c.IDToken}
}

// Store is the token file: one JSON object keyed by provider name, mode
// 0600, replaced atomically under an exclusive lock shared by every process
// of the instance (the gateway and a `nanobot provider login` running
// beside it).
type Store struct {
	path string
}

// NewStore returns the store at path (usually <instance>/state/auth.json).
// It does no IO.
func NewStore(path string) *Store { return &Store{path: path} }

// Path is the token file.
func (s *Store) Path() string { return s.path }

// Load reads every stored credential; a missing file is an empty store.
func (s *Store) Load() (map[string]Credential, error) {
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]Credential{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	return decode(s.path, b)
}

// Get reads one provider's credential.
func (s *Store) Get(provider string) (Credential, bool, error) {
	all, err := s.Load()
	if err != nil {
		return Credential{}, false, err
	}
	c, ok := all[provider]
	return c, ok, nil
}

// Put stores one provider's credential, keeping the others.
func (s *Store) Put(provider string, c Credential) error {
	return s.update(func(all map[string]Credential) error {
		all[provider] = c
		return nil
	})
}

// Delete removes one provider's credential and reports whether there was one.
func (s *Store) Delete(provider string) (bool, error) {
	found := false
	err := s.update(func(all map[string]Credential) error {
		_, found = all[provider]
		delete(all, provider)
		return nil
	})
	return found, err
}

// update runs fn on the stored credentials under the file lock and writes
// the result (0600, atomically). When fn fails nothing is written.
func (s *Store) update(fn func(map[string]Credential) error) error {
	err := atomicfile.Update(s.path, 0o600, func(old []byte) ([]byte, error) {
		all := map[string]Credential{}
		if len(old) > 0 {
			var err error
			if all, err = decode(s.path, old); err != nil {
				return nil, err
			}
		}
		if err := fn(all); err != nil {
			return nil, err
		}
		return json.MarshalIndent(all, "", "  ")
	})
	if err != nil {
		return fmt.Errorf("token store %s: %w", s.path, err)
	}
	return nil
}

func decode(path string, b []byte) (map[string]Credential, error) {
	all := map[string]Credential{}
	if err := json.Unmarshal(b, &all); err != nil {
		// The decoder's message quotes no token values, only offsets.
		return nil, fmt.Errorf("token store %s is not valid JSON (delete it and sign in again): %w", path, err)
	}
	return all, nil
}
