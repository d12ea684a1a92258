package weixin

import (
	"crypto/aes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/url"
)

func urlQueryEscape(s string) string { return url.QueryEscape(s) }

// aesKey reads an attachment key: base64 of the 16 raw bytes, base64 of
// their 32 hex digits, or the hex digits themselves (all three occur).
func aesKey(s string) ([]byte, error) {
	if b, err := hex.DecodeString(s); err == nil && len(b) == 16 {
		return b, nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("aes key is neither hex nor base64")
	}
	if len(b) == 16 {
		return b, nil
	}
	if h, err := hex.DecodeString(string(b)); err == nil && len(h) == 16 {
		return h, nil
	}
	return nil, errors.New("aes key is not 16 bytes")
}

// decrypt opens a CDN file: AES-128-ECB, PKCS#7 padding.
func decrypt(data []byte, key string) ([]byte, error) {
	k, err := aesKey(key)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 || len(data)%aes.BlockSize != 0 {
		return nil, errors.New("not a whole number of AES blocks")
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(data))
	for i := 0; i < len(data); i += aes.BlockSize {
		block.Decrypt(out[i:i+aes.BlockSize], data[i:i+aes.BlockSize])
	}
	pad := int(out[len(out)-1])
	if pad < 1 || pad > aes.BlockSize {
		return nil, errors.New("bad padding (wrong key or damaged file)")
	}
	for _, b := range out[len(out)-pad:] {
		if int(b) != pad {
			return nil, errors.New("bad padding (wrong key or damaged file)")
		}
	}
	return out[:len(out)-pad], nil
}
