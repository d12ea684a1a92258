package teams

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/nanobot-go/nanobot/channels/kit"
	"github.com/nanobot-go/nanobot/channels/media"
)

// clockSkew is the leeway on exp and nbf Microsoft specifies for Bot
// Connector tokens.
const clockSkew = 5 * time.Minute

// keySet caches the Bot Connector's signing keys from its OpenID metadata.
// It is safe for concurrent use; refreshes are serialised.
type keySet struct {
	metadataURL string
	http        *http.Client
	// maxAge is how long the keys are used before they are fetched again;
	// minRefresh is the least time between two fetches for an unknown kid
	// (so forged kids cannot make the gateway hammer the metadata).
	maxAge, minRefresh time.Duration

	fetchMu sync.Mutex // one fetch at a time
	mu      sync.Mutex
	keys    map[string]*rsa.PublicKey
	fetched time.Time
}

// key returns the key for kid, fetching the keys when they are old or kid
// is unknown (at most once per minRefresh).
func (k *keySet) key(ctx context.Context, kid string) (*rsa.PublicKey, error) {
	k.mu.Lock()
	key, ok := k.keys[kid]
	stale := time.Since(k.fetched) > k.maxAge
	recent := time.Since(k.fetched) < k.minRefresh
	k.mu.Unlock()
	if ok && !stale {
		return key, nil
	}
	if !ok && recent {
		return nil, fmt.Errorf("no signing key with kid %q", kid)
	}
	if err := k.refresh(ctx); err != nil {
		if ok { // keep using a known key while the metadata is unreachable
			return key, nil
		}
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if key, ok := k.keys[kid]; ok {
		return key, nil
	}
	return nil, fmt.Errorf("no signing key with kid %q", kid)
}

// refresh fetches the metadata and the keys it names.
func (k *keySet) refresh(ctx context.Context) error {
	k.fetchMu.Lock()
	defer k.fetchMu.Unlock()
	var meta struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := k.get(ctx, k.metadataURL, &meta); err != nil {
		return fmt.Errorf("teams: OpenID metadata: %w", err)
	}
	if meta.JWKSURI == "" {
		return errors.New("teams: OpenID metadata without jwks_uri")
	}
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			N   string `json:"n"`
			E   string `json:"e"`
		} `json:"keys"`
	}
	if err := k.get(ctx, meta.JWKSURI, &set); err != nil {
		return fmt.Errorf("teams: signing keys: %w", err)
	}
	keys := map[string]*rsa.PublicKey{}
	for _, j := range set.Keys {
		if j.Kty != "RSA" || j.Kid == "" {
			continue
		}
		n, err1 := base64.RawURLEncoding.DecodeString(strings.TrimRight(j.N, "="))
		e, err2 := base64.RawURLEncoding.DecodeString(strings.TrimRight(j.E, "="))
		if err1 != nil || err2 != nil || len(e) == 0 || len(e) > 4 {
			continue
		}
		keys[j.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	}
	if len(keys) == 0 {
		return errors.New("teams: the signing key set has no RSA keys")
	}
	k.mu.Lock()
	k.keys, k.fetched = keys, time.Now()
	k.mu.Unlock()
	return nil
}

func (k *keySet) get(ctx context.Context, u string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := k.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", u, resp.StatusCode)
	}
	b, err := media.ReadCapped(resp.Body, 1<<20)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return json.Unmarshal(b, out)
}

// connectorClaims are the claims of a Bot Connector token.
type connectorClaims struct {
	ServiceURL string `json:"serviceurl"`
	jwt.RegisteredClaims
}

// verify checks a request's bearer token and returns its serviceurl claim.
func (c *Channel) verify(ctx context.Context, header string) (string, error) {
	raw, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || strings.TrimSpace(raw) == "" {
		return "", errors.New("no bearer token")
	}
	var claims connectorClaims
	_, err := jwt.ParseWithClaims(strings.TrimSpace(raw), &claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		return c.keys.key(ctx, kid)
	},
		jwt.WithValidMethods([]string{"RS256"}),
		jwt.WithIssuer(Issuer),
		jwt.WithAudience(c.cfg.AppID),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(clockSkew),
	)
	if err != nil {
		return "", err
	}
	return claims.ServiceURL, nil
}

// fetchToken is the client-credentials grant (a kit.TokenFetcher).
func (c *Channel) fetchToken(ctx context.Context) (string, time.Duration, error) {
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {c.cfg.AppID}, "client_secret": {c.cfg.AppPassword}, "scope": {scope}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.loginURL(), strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	var out struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	login := &kit.Client{HTTP: c.http, Redact: c.redact, Check: func(b []byte) error {
		var e struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return &kit.APIError{Code: e.Error, Message: firstLine(e.Description)}
		}
		return nil
	}}
	if err := login.Send(req, &out); err != nil {
		return "", 0, err
	}
	if out.AccessToken == "" {
		return "", 0, errors.New("teams: the login endpoint answered without an access token")
	}
	c.redact.Add(out.AccessToken)
	ttl := time.Duration(out.ExpiresIn) * time.Second
	if ttl <= 0 {
		ttl = time.Hour
	}
	return out.AccessToken, ttl, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
