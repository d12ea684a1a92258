package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/tools"
)

// metaMyUndo keeps the last change `my` made in a conversation: the key
// and its value before, so "undo" can put it back.
const metaMyUndo = "myUndo"

// myKeys are the settings `my` may change: each a chat's own choice, the
// same a person makes with /model, /queue and /voice. Secrets, the
// sandbox, allowFrom and admins are not among them and cannot be added
// from a conversation.
var myKeys = map[string]string{
	"model_preset":  MetaModelPreset,
	"queue_mode":    MetaQueueMode,
	"voice_replies": MetaVoiceReplies,
}

// myTool is nanobot's `my`: the agent checks its own settings in this
// conversation and, for an admin, changes the chat's own choices. Each
// change is logged, announced in the chat and can be undone.
type myTool struct{ a *Agent }

func (*myTool) Name() string { return "my" }
func (*myTool) Description() string {
	return "Check and set your own settings in this conversation. action=check shows the model (and the presets to switch to), " +
		"the queue mode, voice replies, the context window and who is talking. action=set (key, value) changes this chat's model_preset " +
		"(a preset name, or reset), queue_mode (queue, steer, collect, interrupt, or reset) or voice_replies (on/off) — only when the user asks, " +
		"and only for an admin; the chat is told. action=undo puts back the last change. Keys, the sandbox, allowFrom and admins are never here."
}
func (*myTool) Parameters() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{
		"action": map[string]any{"type": "string", "enum": []any{"check", "set", "undo"}},
		"key":    map[string]any{"type": "string", "enum": []any{"model_preset", "queue_mode", "voice_replies"}, "description": "set: which setting"},
		"value":  map[string]any{"type": "string", "description": "set: the new value (reset goes back to the default)"},
	}, "required": []any{"action"}}
}

func (t *myTool) Execute(ctx context.Context, args map[string]any) (tools.Result, error) {
	cc, _ := tools.CallContextFrom(ctx)
	l := t.a.Loop
	if l == nil || cc.SessionKey == "" {
		return tools.Result{}, errors.New("no conversation to read settings from")
	}
	a := tools.Args(args)
	sess, err := l.cfg.Store.Load(ctx, cc.SessionKey)
	if err != nil {
		return tools.Result{}, fmt.Errorf("load this conversation: %w", err)
	}
	switch action := a.String("action"); action {
	case "check":
		return tools.Result{Content: t.check(sess, cc)}, nil
	case "set", "undo":
		if !cc.Admin {
			return tools.Result{}, errors.New("only an admin may change settings; the user can use /model, /queue or /voice in a direct chat")
		}
		key, value := a.String("key"), strings.TrimSpace(a.String("value"))
		if action == "undo" {
			u, _ := sess.Meta(metaMyUndo).(map[string]any)
			key, _ = u["key"].(string)
			if key == "" {
				return tools.Result{}, errors.New("nothing to undo in this conversation")
			}
			value = "reset"
			if old, ok := u["old"]; ok && old != nil {
				value = fmt.Sprint(old)
			}
		}
		return t.set(ctx, sess, cc, key, value, action == "undo")
	default:
		return tools.Result{}, fmt.Errorf("unknown action %q", action)
	}
}

func (t *myTool) check(sess *session.Session, cc tools.CallContext) string {
	l := t.a.Loop
	var b strings.Builder
	preset, _ := sess.Meta(MetaModelPreset).(string)
	fmt.Fprintf(&b, "model: %s\n", l.cfg.Runner.Model)
	if preset != "" {
		fmt.Fprintf(&b, "model_preset: %s (this chat)\n", preset)
	} else {
		b.WriteString("model_preset: none (the agent's model)\n")
	}
	if len(l.cfg.Presets.Names) > 0 {
		fmt.Fprintf(&b, "presets available: %s\n", strings.Join(l.cfg.Presets.Names, ", "))
	}
	choice, _ := sess.Meta(MetaQueueMode).(string)
	if configs.ValidQueueMode(choice) {
		fmt.Fprintf(&b, "queue_mode: %s (this chat)\n", choice)
	} else {
		fmt.Fprintf(&b, "queue_mode: default (%s for direct chats, %s for groups)\n", l.cfg.Queue.For(false), l.cfg.Queue.For(true))
	}
	voice, _ := sess.Meta(MetaVoiceReplies).(bool)
	fmt.Fprintf(&b, "voice_replies: %s (available here: %v)\n", map[bool]string{true: "on", false: "off"}[voice], l.cfg.Voice.on(cc.Channel))
	if l.cfg.ContextWindowTokens > 0 {
		fmt.Fprintf(&b, "context_window_tokens: %d\n", l.cfg.ContextWindowTokens)
	}
	fmt.Fprintf(&b, "conversation: %s (%d messages)\nchannel: %s, sender: %s, admin: %v\n", sess.Key, sess.Len(), cc.Channel, cc.SenderID, cc.Admin)
	b.WriteString("Not changeable from a conversation: keys, the sandbox, allowFrom, admins (config.json or the workbench).")
	return b.String()
}

// set changes key to value ("reset": the default) in sess, remembers the
// old value for undo (unless this is the undo), logs it and tells the chat.
func (t *myTool) set(ctx context.Context, sess *session.Session, cc tools.CallContext, key, value string, undo bool) (tools.Result, error) {
	l := t.a.Loop
	meta, ok := myKeys[key]
	if !ok {
		return tools.Result{}, fmt.Errorf("key must be one of model_preset, queue_mode, voice_replies")
	}
	var next any // nil: reset
	reset := strings.EqualFold(value, "reset") || value == ""
	switch key {
	case "model_preset":
		if !reset {
			if len(l.cfg.Presets.Names) == 0 {
				return tools.Result{}, errors.New("no model presets are configured (the owner adds them under modelPresets in config.json)")
			}
			if !slices.Contains(l.cfg.Presets.Names, value) {
				return tools.Result{}, fmt.Errorf("unknown preset %q; available: %s", value, strings.Join(l.cfg.Presets.Names, ", "))
			}
			if _, err := l.cfg.Presets.Resolve(value); err != nil {
				return tools.Result{}, fmt.Errorf("preset %q cannot be used: %w", value, err)
			}
			next = value
		}
	case "queue_mode":
		if !reset {
			if !configs.ValidQueueMode(strings.ToLower(value)) {
				return tools.Result{}, fmt.Errorf("unknown queue mode %q; available: %s", value, strings.Join(configs.QueueModes, ", "))
			}
			next = strings.ToLower(value)
		}
	case "voice_replies":
		switch strings.ToLower(value) {
		case "on", "true":
			if !l.cfg.Voice.on(cc.Channel) {
				return tools.Result{}, errors.New("voice replies are not available on this channel (tts.enabled)")
			}
			next = true
		case "off", "false", "reset", "":
		default:
			return tools.Result{}, fmt.Errorf("voice_replies is on or off, not %q", value)
		}
	}
	old := sess.Meta(meta)
	if err := l.cfg.Store.SetMetadata(ctx, sess, meta, next); err != nil {
		return tools.Result{}, fmt.Errorf("save %s: %w", key, err)
	}
	var undoRec any // cleared by an undo: undoing twice does not flip back
	if !undo {
		undoRec = map[string]any{"key": key, "old": old}
	}
	if err := l.cfg.Store.SetMetadata(ctx, sess, metaMyUndo, undoRec); err != nil {
		l.log.Warn("my: the undo record was not saved", "session", sess.Key, "err", err)
	}
	if key == "queue_mode" {
		l.rememberQueueChoice(sess)
	}
	shown := func(v any) string {
		if v == nil || v == false {
			return "default"
		}
		return fmt.Sprint(v)
	}
	verb := "changed"
	if undo {
		verb = "put back"
	}
	l.log.Info("my: setting "+verb, "session", sess.Key, "key", key, "from", shown(old), "to", shown(next), "by", cc.Channel+":"+cc.SenderID)
	note := fmt.Sprintf("⚙️ Setting %s: %s %s → %s.", verb, key, shown(old), shown(next))
	if !undo {
		note += " Ask me to undo it, or use /model, /queue or /voice."
	}
	if err := l.cfg.Out.PublishOutbound(ctx, bus.Outbound{Channel: cc.Channel, ChatID: cc.ChatID, SessionKey: sess.Key, Kind: bus.KindMessage, Content: note}); err != nil {
		l.log.Warn("my: the change notice was not sent", "session", sess.Key, "err", err)
	}
	return tools.Result{Content: fmt.Sprintf("%s %s: %s → %s (from the next message). The chat was told.", strings.ToUpper(verb[:1])+verb[1:], key, shown(old), shown(next))}, nil
}
