package stt

import (
	"mime"
	"path/filepath"
	"strings"
)

// extMIME are the content types of audio files by extension, where Go's
// table has none or another one (.oga, .opus, .m4a).
var extMIME = map[string]string{
	".ogg": "audio/ogg", ".oga": "audio/ogg", ".opus": "audio/ogg",
	".mp3": "audio/mpeg", ".mpga": "audio/mpeg", ".mpeg": "audio/mpeg",
	".m4a": "audio/mp4", ".mp4": "audio/mp4",
	".wav": "audio/wav", ".webm": "audio/webm", ".weba": "audio/webm",
	".flac": "audio/flac", ".aac": "audio/aac", ".amr": "audio/amr",
}

// mimeOf is the content type of the audio file at path: the one given,
// unless it says nothing, else the extension's.
func mimeOf(path, given string) string {
	given = strings.ToLower(strings.TrimSpace(given))
	if i := strings.IndexByte(given, ';'); i >= 0 {
		given = strings.TrimSpace(given[:i])
	}
	if given != "" && given != "application/octet-stream" {
		return given
	}
	ext := strings.ToLower(filepath.Ext(path))
	if t, ok := extMIME[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return "application/octet-stream"
}

// extFormat are the format names of extensions that have another one
// (Telegram's .oga voice notes are Ogg).
var extFormat = map[string]string{"oga": "ogg", "opus": "ogg", "mpga": "mp3", "mpeg": "mp3", "mp4": "m4a", "weba": "webm"}

// mimeFormat are the format names of content types.
var mimeFormat = map[string]string{
	"audio/ogg": "ogg", "application/ogg": "ogg", "audio/opus": "ogg",
	"audio/mpeg": "mp3", "audio/mp3": "mp3",
	"audio/mp4": "m4a", "audio/m4a": "m4a", "audio/x-m4a": "m4a",
	"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/vnd.wave": "wav",
	"audio/webm": "webm", "audio/flac": "flac", "audio/x-flac": "flac", "audio/aac": "aac", "audio/amr": "amr",
}

// format is the audio format's short name ("ogg", "mp3", "m4a"), as
// OpenRouter's input_audio.format and StepFun's format.type name it: by
// the content type when it is a known one, else by the extension.
func (a audioFile) format() string {
	if f, ok := mimeFormat[a.mime]; ok {
		return f
	}
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(a.name)), ".")
	if f, ok := extFormat[ext]; ok {
		return f
	}
	return ext
}

// whisperExts are the extensions OpenAI's endpoint accepts; it tells the
// format by the file name alone.
var whisperExts = map[string]bool{"flac": true, "m4a": true, "mp3": true, "mp4": true, "mpeg": true, "mpga": true, "oga": true, "ogg": true, "wav": true, "webm": true}

// uploadName is the file name sent with a multipart upload: the file's
// own, or with the extension of its format when the service would not
// recognise its own (voice.opus is sent as voice.ogg).
func (a audioFile) uploadName() string {
	ext := strings.ToLower(filepath.Ext(a.name))
	if whisperExts[strings.TrimPrefix(ext, ".")] {
		return a.name
	}
	if f := a.format(); whisperExts[f] {
		return strings.TrimSuffix(a.name, filepath.Ext(a.name)) + "." + f
	}
	return a.name
}
