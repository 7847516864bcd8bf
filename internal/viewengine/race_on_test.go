//go:build race

package viewengine

// queryRace reports a -race build, whose memory figures mean nothing.
const queryRace = true
