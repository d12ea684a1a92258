package webui

import (
	"fmt"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"
)

// MinPasswordLen is the shortest workbench password HashPassword accepts.
const MinPasswordLen = 10

// HashPassword returns the bcrypt hash to store as gateway.webui.password.
func HashPassword(password string) (string, error) {
	if n := utf8.RuneCountInString(password); n < MinPasswordLen {
		return "", fmt.Errorf("webui: the password is %d characters; want at least %d", n, MinPasswordLen)
	}
	if len(password) > 72 {
		return "", fmt.Errorf("webui: the password is %d bytes; bcrypt uses at most 72", len(password))
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return "", fmt.Errorf("webui: hash password: %w", err)
	}
	return string(h), nil
}
