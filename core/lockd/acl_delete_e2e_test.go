package lockd_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/lockstep/lockstep/core/acl"
	"github.com/lockstep/lockstep/core/api"
)

// TestACLTokenDeleteAnswers: goal — deleting a token that does not exist
// is 404 not_found, and deleting the last admin token is 409
// failed_precondition with one plain sentence (no refusal prefix, said
// once), whether the member that answers leads the metadata group or
// forwards the command to its leader; neither changes anything. Method:
// an ACL cluster; on every member, delete an unknown id and then the
// bootstrap (only admin) token, and check the answers; the root token
// still works afterwards.
func TestACLTokenDeleteAnswers(t *testing.T) {
	c := startACLCluster(t)
	rootID := acl.Hash(rootSecret)[:16]
	for i := range c.members {
		code, e, _ := call(t, http.MethodPost, c.url(i)+api.PathACLTokenDelete, rootSecret, api.TokenDelete{ID: "0123456789abcdef"}, nil)
		if code != http.StatusNotFound || e.Code != api.CodeNotFound || !strings.Contains(e.Error, "0123456789abcdef") {
			t.Errorf("member %d (meta leader %v): delete of an unknown token: %d %+v", i, c.members[i].Host.Meta().IsLeader(), code, e)
		}
		code, e, _ = call(t, http.MethodPost, c.url(i)+api.PathACLTokenDelete, rootSecret, api.TokenDelete{ID: rootID}, nil)
		if code != http.StatusConflict || e.Code != api.CodeFailedPrecondition {
			t.Errorf("member %d (meta leader %v): delete of the last admin token: %d %+v", i, c.members[i].Host.Meta().IsLeader(), code, e)
		}
		if strings.Contains(e.Error, "refused") || strings.Count(e.Error, "last admin token") != 1 || strings.Count(e.Error, rootID) != 1 {
			t.Errorf("member %d: last admin message %q, want one sentence naming the token once", i, e.Error)
		}
	}
	c.everywhere(rootSecret, "a:1", http.StatusOK)
}
