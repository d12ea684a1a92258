package tts

// OggCRCForTest exposes the page checksum to tests that forge pages.
func OggCRCForTest(page []byte) uint32 { return oggCRC(page) }
