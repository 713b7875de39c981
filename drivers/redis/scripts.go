package redis

import (
	"context"
	"embed"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// The scripts live in scripts/*.lua, each with a header stating its KEYS,
// ARGV and return values; scripts/common.lua (the shared KEYS, ARGV and
// helpers) is prepended to each, and scripts/reserve_lib.lua (the lease
// helper) to reserve.lua and settle.lua after it.
//
//go:embed scripts/*.lua
var scriptFS embed.FS

var (
	scriptEnqueue     = newScript("enqueue.lua")
	scriptReserve     = newScript("reserve.lua", "reserve_lib.lua")
	scriptSettle      = newScript("settle.lua", "reserve_lib.lua")
	scriptExtend      = newScript("extend.lua")
	scriptPause       = newScript("pause.lua")
	scriptResume      = newScript("resume.lua")
	scriptRetryFailed = newScript("retry_failed.lua")
	scriptPurge       = newScript("purge.lua")
	scriptQueued      = newScript("queued.lua")
	scriptFinished    = newScript("finished.lua")
	scriptReclaim     = newScript("reclaim.lua", "reserve_lib.lua")

	allScripts = []*goredis.Script{
		scriptEnqueue, scriptReserve, scriptSettle, scriptExtend, scriptPause, scriptResume, scriptRetryFailed, scriptPurge,
		scriptQueued, scriptFinished, scriptReclaim,
	}
)

// newScript returns the script of name, after common.lua and the helpers
// of libs.
func newScript(name string, libs ...string) *goredis.Script {
	var b strings.Builder
	for _, f := range append(append([]string{"common.lua"}, libs...), name) {
		body, err := scriptFS.ReadFile("scripts/" + f)
		if err != nil {
			panic(err)
		}
		b.Write(body)
		b.WriteString("\n")
	}
	return goredis.NewScript(b.String())
}

// newPlainScript returns a script without common.lua.
func newPlainScript(name string) *goredis.Script {
	body, err := scriptFS.ReadFile("scripts/" + name)
	if err != nil {
		panic(err)
	}
	return goredis.NewScript(string(body))
}

// loadScripts loads every script on the server (on every master of a
// cluster), so that the pipelines of EVALSHA find them.
func loadScripts(ctx context.Context, c goredis.UniversalClient) error {
	for _, s := range allScripts {
		if err := s.Load(ctx, c).Err(); err != nil {
			return err
		}
	}
	return nil
}
