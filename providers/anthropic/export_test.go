package anthropic

import (
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/internal/wire"
)

// ParseMessageJSON reads a Messages API response body as Chat does.
func ParseMessageJSON(data []byte, model string) (*providers.LLMResponse, error) {
	var msg messageResponse
	if err := wire.DecodeLenient(data, &msg); err != nil {
		return nil, err
	}
	return parseMessage(&msg, model), nil
}
