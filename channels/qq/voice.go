package qq

import "github.com/nanobot-go/nanobot/channels"

var _ channels.Voiceless = (*Channel)(nil)

// Voiceless implements channels.Voiceless: QQ bots send voice only as a
// SILK file (upload file_type 3), nanobot's voice replies are Ogg/Opus
// and cannot be turned into SILK without a native encoder, and plain
// files (file_type 4) are not open to bots; so no speech is made for QQ
// chats instead of a paid speech call whose upload QQ refuses.
func (*Channel) Voiceless() {}
