package openai

import "strings"

// Ollama (seen with 0.17.4) repeats the end of an answer when the request
// offers tools and the model's chat template does not render tool calls:
// its tool-call parser then watches for "{", gives up when text came
// before it, and still sends what it had buffered from that "{" on a
// second time as the final piece. The answer arrives as A+B+B, where B
// begins at the answer's first "{" — a tool call written as text
// (<tool_call>{…}</tool_call>) comes twice, and so does the tail of any
// answer with a JSON example in it. Ollama names itself in
// system_fingerprint; only its answers to requests with tools are
// repaired, and only when the tail is that exact repeat.

// ollamaFingerprint is the system_fingerprint Ollama's OpenAI API sends.
const ollamaFingerprint = "fp_ollama"

// ollamaEchoed reports whether content is an answer and the echo of its
// tail: the text from the first "{" on, twice. It returns the answer.
func ollamaEchoed(content string) (string, bool) {
	i := strings.IndexByte(content, '{')
	if i <= 0 || strings.TrimSpace(content[:i]) == "" {
		return content, false // nothing before the "{": Ollama parsed or passed it whole
	}
	rest := content[i:]
	half := len(rest) / 2
	if len(rest)%2 != 0 || rest[:half] != rest[half:] {
		return content, false
	}
	return content[:i+half], true
}

// isOllamaEcho reports whether piece, the last piece of a stream, is
// Ollama's repeat of the tail of sofar (what came before it).
func isOllamaEcho(sofar, piece string) bool {
	kept, echoed := ollamaEchoed(sofar + piece)
	return echoed && kept == sofar
}
