package regions

import (
	"errors"
	"fmt"

	"github.com/kvnode/kvnode/region"
)

// writeError is the answer to a multi-key write split over partition
// groups, from each group's error (nil where its part was applied). While
// any part's outcome is unknown (ErrIndeterminate: handed to Raft, no
// answer) the answer is that, even when another group refused its part: a
// refusal (400, 404, 409) tells the client the request is over, and an
// unknown part can still be applied after the answer. Otherwise every part
// has been applied, refused or never appended, and a refusal is preferred
// over an availability error as firstError does, so that the answer says
// something about the data.
func writeError(errs []error) error {
	var refusal error
	for _, err := range errs {
		if err != nil && !errors.Is(err, region.ErrNoLeader) && !errors.Is(err, region.ErrNotLeader) && !errors.Is(err, region.ErrIndeterminate) {
			refusal = err
			break
		}
	}
	for _, err := range errs {
		if errors.Is(err, region.ErrIndeterminate) {
			if refusal != nil {
				// The refusal is named, not wrapped: the answer is the
				// unknown outcome, not the refusal's 4xx.
				return fmt.Errorf("%w (another partition group refused its part: %v)", err, refusal)
			}
			return err
		}
	}
	return FirstError(errs)
}
