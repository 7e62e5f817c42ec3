package regions

import (
	"context"
	"fmt"

	"github.com/kvnode/kvnode/region"
)

// Watch is the seam of GET /kv/v1/watch: it answers
// region.ErrNotSupported until the change streams of the region's groups
// are served, so that the REST side builds against it.
func (a *API) Watch(ctx context.Context, name string, opts region.WatchOptions) (region.Watch, error) {
	return nil, fmt.Errorf("%w: watch is not served yet", region.ErrNotSupported)
}
