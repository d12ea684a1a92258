package feishu

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
)

// decrypt opens an encrypted event ({"encrypt":"…"}): base64 of a 16-byte
// IV followed by AES-256-CBC ciphertext with PKCS#7 padding, the key being
// SHA-256 of the app's encrypt key.
func decrypt(encryptKey, encoded string) ([]byte, error) {
	if encryptKey == "" {
		return nil, errors.New("the event is encrypted but encryptKey is not set")
	}
	raw, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil, fmt.Errorf("encrypted event: %w", err)
	}
	if len(raw) < 2*aes.BlockSize || len(raw)%aes.BlockSize != 0 {
		return nil, fmt.Errorf("encrypted event: %d bytes is not an IV and whole blocks", len(raw))
	}
	key := sha256.Sum256([]byte(encryptKey))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	iv, data := raw[:aes.BlockSize], raw[aes.BlockSize:]
	out := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, data)
	pad := int(out[len(out)-1])
	if pad == 0 || pad > aes.BlockSize || pad > len(out) {
		return nil, errors.New("encrypted event: bad padding (wrong encryptKey?)")
	}
	for _, b := range out[len(out)-pad:] {
		if int(b) != pad {
			return nil, errors.New("encrypted event: bad padding (wrong encryptKey?)")
		}
	}
	return out[:len(out)-pad], nil
}
