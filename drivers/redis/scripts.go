package redis

import (
	"context"
	"embed"

	goredis "github.com/redis/go-redis/v9"
)

// The scripts live in scripts/*.lua, each with a header stating its KEYS,
// ARGV and return values; scripts/common.lua (the shared KEYS, ARGV and
// helpers) is prepended to each.
//
//go:embed scripts/*.lua
var scriptFS embed.FS

var (
	scriptEnqueue     = newScript("enqueue.lua")
	scriptReserve     = newScript("reserve.lua")
	scriptExtend      = newScript("extend.lua")
	scriptAck         = newScript("ack.lua")
	scriptRetry       = newScript("retry.lua")
	scriptFail        = newScript("fail.lua")
	scriptRelease     = newScript("release.lua")
	scriptPause       = newScript("pause.lua")
	scriptResume      = newScript("resume.lua")
	scriptRetryFailed = newScript("retry_failed.lua")
	scriptPurge       = newScript("purge.lua")

	allScripts = []*goredis.Script{
		scriptEnqueue, scriptReserve, scriptExtend, scriptAck, scriptRetry, scriptFail, scriptRelease,
		scriptPause, scriptResume, scriptRetryFailed, scriptPurge,
	}
)

func newScript(name string) *goredis.Script {
	common, err := scriptFS.ReadFile("scripts/common.lua")
	if err != nil {
		panic(err)
	}
	body, err := scriptFS.ReadFile("scripts/" + name)
	if err != nil {
		panic(err)
	}
	return goredis.NewScript(string(common) + "\n" + string(body))
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
