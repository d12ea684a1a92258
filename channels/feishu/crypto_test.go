package feishu

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
)

// encryptVector builds an encrypted event the way the platform documents
// it, with crypto/aes directly: base64(IV ‖ AES-256-CBC(PKCS#7(plain)))
// under SHA-256(key).
func encryptVector(t *testing.T, key string, iv []byte, plain string) string {
	t.Helper()
	k := sha256.Sum256([]byte(key))
	block, err := aes.NewCipher(k[:])
	if err != nil {
		t.Fatal(err)
	}
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	data := []byte(plain + strings.Repeat(string(rune(pad)), pad))
	out := make([]byte, len(data))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(out, data)
	return base64.StdEncoding.EncodeToString(append(append([]byte{}, iv...), out...))
}

func TestDecrypt(t *testing.T) {
	iv := []byte("0123456789abcdef")
	for _, plain := range []string{`{"challenge":"x"}`, strings.Repeat("a", 16), `{"event":"你好"}`} {
		enc := encryptVector(t, "test key", iv, plain)
		got, err := decrypt("test key", enc)
		if err != nil || string(got) != plain {
			t.Errorf("decrypt(%q) = %q, %v", plain, got, err)
		}
	}
	// A fixed vector, so that the scheme cannot drift with the helper.
	const fixed = "MDEyMzQ1Njc4OWFiY2RlZg=="
	if enc := encryptVector(t, "k", iv, ""); !strings.HasPrefix(enc, fixed[:20]) {
		t.Errorf("vector starts %q, want the IV first", enc[:20])
	}
	good := encryptVector(t, "test key", iv, `{"a":1}`)
	for name, tc := range map[string]struct{ key, enc string }{
		"no key":     {"", good},
		"wrong key":  {"other key", good},
		"not base64": {"test key", "%%%"},
		"too short":  {"test key", base64.StdEncoding.EncodeToString(iv)},
		"not blocks": {"test key", base64.StdEncoding.EncodeToString(append(iv, 1, 2, 3))},
	} {
		if got, err := decrypt(tc.key, tc.enc); err == nil {
			t.Errorf("%s: decrypt = %q, want an error", name, got)
		} else if tc.key != "" && strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: the error shows the key: %v", name, err)
		}
	}
}
