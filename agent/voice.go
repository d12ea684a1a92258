package agent

import (
	"context"
	"strings"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/bus"
)

// MetaVoiceReplies is the session metadata key set by "/voice on": every
// answer in the chat is also spoken.
const MetaVoiceReplies = "voiceReplies"

// Speaker turns a final answer into a voice message file (the tts package
// behind it). Speak blocks for the speech call; it is called after the
// turn, outside the LLM concurrency cap.
type Speaker interface {
	// Speak returns the audio as a local Ogg/Opus file.
	Speak(ctx context.Context, text string) (bus.Media, error)
}

// VoiceConfig enables voice replies (LoopConfig.Voice).
type VoiceConfig struct {
	// Speaker makes the audio; nil turns voice replies off.
	Speaker Speaker
	// CanSpeak says whether a channel can deliver voice or audio (nil:
	// every channel). Chats on other channels are never spoken to.
	CanSpeak func(channel string) bool
}

func (v VoiceConfig) on(channel string) bool {
	return v.Speaker != nil && (v.CanSpeak == nil || v.CanSpeak(channel))
}

// wantsVoice reports whether m's answer is spoken: the user sent a voice
// note, or turned voice replies on for the chat. Background, cron and API
// turns are never spoken.
func (l *Loop) wantsVoice(m bus.Inbound, sess *session.Session) bool {
	if !l.cfg.Voice.on(m.Channel) || m.Background || m.Ephemeral || m.Source == bus.SourceAPI || m.Source == bus.SourceCron {
		return false
	}
	if m.Voice {
		return true
	}
	on, _ := sess.Meta(MetaVoiceReplies).(bool)
	return on
}

// speak publishes the spoken form of a final answer, after its text. A
// failure is logged: the text already reached the user.
func (l *Loop) speak(ctx context.Context, m bus.Inbound, text string) {
	text = speakable(text)
	if text == "" {
		return
	}
	audio, err := l.cfg.Voice.Speaker.Speak(ctx, text)
	if err != nil {
		l.log.Warn("voice reply failed; the text was sent", "session", m.Key(), "err", err)
		return
	}
	// Not Final: the text was the turn's final reply, and the outbox
	// accepts one final message per turn.
	l.publish(ctx, m, bus.Outbound{Kind: bus.KindMessage, Media: []bus.Media{audio}, Voice: true})
}

// speakable strips the Markdown a voice would read out literally.
func speakable(text string) string {
	r := strings.NewReplacer("**", "", "__", "", "`", "", "~~", "")
	var b strings.Builder
	for line := range strings.SplitSeq(r.Replace(text), "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimLeft(line, "#*->• ")
		if line == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(line)
	}
	return b.String()
}

// voiceCommand is /voice: show, or turn voice replies on or off for the
// chat.
func (l *Loop) voiceCommand(ctx context.Context, m bus.Inbound, args string) error {
	if !l.cfg.Voice.on(m.Channel) {
		l.reply(ctx, m, "Voice replies are not available here (set tts.enabled in config.json; the channel must support voice or audio files).")
		return nil
	}
	sess, err := l.commandSession(ctx, m)
	if err != nil {
		return err
	}
	on, _ := sess.Meta(MetaVoiceReplies).(bool)
	arg := strings.ToLower(strings.TrimSpace(args))
	if arg != "" && m.IsGroup && !m.Admin {
		l.reply(ctx, m, "Only an admin of this channel may switch voice replies in a group.")
		return nil
	}
	switch arg {
	case "":
		state := "off: I answer voice notes with voice, text with text"
		if on {
			state = "on: every answer is also spoken"
		}
		l.reply(ctx, m, "Voice replies are "+state+". Use /voice on or /voice off.")
		return nil
	case "on":
		err = l.cfg.Store.SetMetadata(ctx, sess, MetaVoiceReplies, true)
	case "off":
		err = l.cfg.Store.SetMetadata(ctx, sess, MetaVoiceReplies, nil)
	default:
		l.reply(ctx, m, "Use /voice on or /voice off.")
		return nil
	}
	if err != nil {
		l.reply(ctx, m, "Sorry, I could not save the voice setting.")
		return err
	}
	if strings.EqualFold(strings.TrimSpace(args), "on") {
		l.reply(ctx, m, "Voice replies on: every answer in this chat is also spoken.")
	} else {
		l.reply(ctx, m, "Voice replies off: I answer voice notes with voice, text with text.")
	}
	return nil
}
