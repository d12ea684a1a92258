package stt

import (
	"slices"
	"strings"
)

// Wire is the shape of a service's API.
type Wire string

const (
	// WireWhisper is OpenAI's POST {apiBase}/audio/transcriptions with a
	// multipart body ("file", "model", "language"), answered with
	// {"text": ...}: OpenAI, Groq, SiliconFlow, StepFun's step-asr models,
	// and any Whisper-compatible server.
	WireWhisper Wire = "whisper"
	// WireOpenRouter is OpenRouter's POST {apiBase}/audio/transcriptions
	// with a JSON body: {"model", "input_audio": {"data": base64,
	// "format"}, "language"}, answered with {"text": ...}.
	WireOpenRouter Wire = "openrouter"
	// WireMiMo is Xiaomi MiMo's ASR through POST {apiBase}/chat/completions:
	// one user message holding an input_audio part with a base64 data URL,
	// "asr_options": {"language"}; the text is the answer's message content.
	WireMiMo Wire = "mimo"
	// WireStepFun is StepFun's POST {apiBase}/audio/asr/sse: a JSON body
	// with the base64 audio under audio.data and the model, language and
	// format under audio.input, answered with server-sent events up to
	// one of type "transcript.text.done".
	WireStepFun Wire = "stepfun"
	// WireAssemblyAI is AssemblyAI's REST API: POST {apiBase}/upload (the
	// raw audio), POST {apiBase}/transcript ({"audio_url",
	// "speech_models", "language_code"}), then GET {apiBase}/transcript/{id}
	// until its status is completed or error. The key is sent as the
	// Authorization header as it is, without "Bearer".
	WireAssemblyAI Wire = "assemblyai"
)

// Spec is one speech-to-text service nanobot knows.
type Spec struct {
	// Name is the registry name, as transcription.provider and the
	// providers section spell it.
	Name string
	// Aliases are other names transcription.provider accepts.
	Aliases []string
	// DefaultAPIBase is the endpoint used when providers.<name>.apiBase
	// is empty.
	DefaultAPIBase string
	// DefaultModel is the model used when transcription.model is empty.
	// AssemblyAI takes a comma-separated list, tried in order.
	DefaultModel string
	// Wire is the API's shape.
	Wire Wire
	// MaxAudioBytes is the largest file the service takes in one request.
	MaxAudioBytes int64
}

// defaultMaxAudio is the upload limit of OpenAI's Whisper endpoint, and
// the bound for every service that states a higher one: the file is held
// in memory while it is sent.
const defaultMaxAudio = 25 << 20

// registry is nanobot's list of transcription services (its
// transcription_registry.py), with what each one's API needs.
var registry = []Spec{
	{Name: "groq", DefaultAPIBase: "https://api.groq.com/openai/v1", DefaultModel: "whisper-large-v3", Wire: WireWhisper},
	{Name: "openai", DefaultAPIBase: "https://api.openai.com/v1", DefaultModel: "whisper-1", Wire: WireWhisper},
	{Name: "openrouter", DefaultAPIBase: "https://openrouter.ai/api/v1", DefaultModel: "openai/whisper-1", Wire: WireOpenRouter},
	// MiMo takes at most 10 MB of base64, which is 7.5 MB of audio.
	{Name: "xiaomi_mimo", Aliases: []string{"mimo", "xiaomi"}, DefaultAPIBase: "https://api.xiaomimimo.com/v1", DefaultModel: "mimo-v2.5-asr", Wire: WireMiMo, MaxAudioBytes: (10 << 20) * 3 / 4},
	{Name: "stepfun", DefaultAPIBase: "https://api.stepfun.com/v1", DefaultModel: "stepaudio-2.5-asr", Wire: WireStepFun},
	{Name: "assemblyai", DefaultAPIBase: "https://api.assemblyai.com/v2", DefaultModel: "universal-3-pro,universal-2", Wire: WireAssemblyAI},
	{Name: "siliconflow", Aliases: []string{"silicon"}, DefaultAPIBase: "https://api.siliconflow.cn/v1", DefaultModel: "FunAudioLLM/SenseVoiceSmall", Wire: WireWhisper},
}

// Providers returns the known services, in nanobot's order.
func Providers() []Spec {
	out := slices.Clone(registry)
	for i := range out {
		out[i].Aliases = slices.Clone(out[i].Aliases)
		if out[i].MaxAudioBytes == 0 {
			out[i].MaxAudioBytes = defaultMaxAudio
		}
	}
	return out
}

// Names returns the registry names, in nanobot's order.
func Names() []string {
	out := make([]string, len(registry))
	for i, s := range registry {
		out[i] = s.Name
	}
	return out
}

// Lookup finds a service by name or alias, in any case and with or
// without "_" and "-" ("xiaomiMimo", "XIAOMI_MIMO" and "mimo" are all
// xiaomi_mimo).
func Lookup(name string) (Spec, bool) {
	n := norm(name)
	if n == "" {
		return Spec{}, false
	}
	for _, s := range Providers() {
		if norm(s.Name) == n || slices.ContainsFunc(s.Aliases, func(a string) bool { return norm(a) == n }) {
			return s, true
		}
	}
	return Spec{}, false
}

func norm(s string) string {
	return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(strings.TrimSpace(s)))
}

// wireFor is the API a model of spec is sent to: StepFun serves its older
// step-asr models on the Whisper-compatible endpoint and the newer ones on
// the SSE endpoint.
func wireFor(spec Spec, model string) Wire {
	if spec.Wire == WireStepFun && strings.HasPrefix(strings.ToLower(model), "step-asr") {
		return WireWhisper
	}
	return spec.Wire
}
