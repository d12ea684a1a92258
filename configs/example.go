package configs

import _ "embed"

// Example is the documented starter config that `nanobot onboard` writes. It
// references the Anthropic key as ${ANTHROPIC_API_KEY:-}, so a key kept in the
// environment never lands in the file.
//
//go:embed config.example.json
var Example []byte
