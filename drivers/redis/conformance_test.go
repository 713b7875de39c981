package redis

import (
	"testing"

	"github.com/alexify/mailer/drivers/redis/internal/redistest"
)

// TestConformance holds the source to the public contract on the
// standalone server.
func TestConformance(t *testing.T) {
	runConformance(t, redistest.Standalone(t))
}
