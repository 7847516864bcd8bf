//go:build !race

package hybridctx

// queryRace reports a -race build, whose memory figures mean nothing.
const queryRace = false
