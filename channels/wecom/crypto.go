package wecom

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"fmt"
)

// decrypt opens an attachment: AES-256-CBC with the base64-decoded aeskey
// (32 bytes), the IV being the key's first 16 bytes, PKCS#7 padding of 1 to
// 32 bytes (WeCom pads to 32, not to the AES block size).
func decrypt(data []byte, aesKey string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(aesKey)
	if err != nil {
		// WeCom's keys are 43 characters without the trailing "=".
		key, err = base64.RawStdEncoding.DecodeString(aesKey)
	}
	if err != nil || len(key) != 32 {
		return nil, errors.New("wecom: decrypt: aeskey is not 32 bytes of base64")
	}
	if len(data) == 0 || len(data)%aes.BlockSize != 0 {
		return nil, fmt.Errorf("wecom: decrypt: %d bytes is not a whole number of AES blocks", len(data))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, key[:aes.BlockSize]).CryptBlocks(out, data)
	pad := int(out[len(out)-1])
	if pad < 1 || pad > 32 || pad > len(out) {
		return nil, errors.New("wecom: decrypt: bad padding (wrong key or damaged file)")
	}
	for _, b := range out[len(out)-pad:] {
		if int(b) != pad {
			return nil, errors.New("wecom: decrypt: bad padding (wrong key or damaged file)")
		}
	}
	return out[:len(out)-pad], nil
}
