//go:build !goolm

package matrix

// Without the goolm build tag mautrix's crypto would need libolm and cgo,
// which the static release binary cannot have: such a build has no
// end-to-end encryption, and says so when e2eeEnabled is set.

func openCrypto(*Channel) (cryptoEngine, error) { return nil, errNoCrypto }
