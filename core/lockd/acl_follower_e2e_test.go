package lockd_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/lockstep/lockstep/core/api"
)

// metaFollowers are the members that do not lead the metadata group: an
// ACL change sent to one is forwarded to the leader.
func (c *aclCluster) metaFollowers() []int {
	var out []int
	for i, m := range c.members {
		if !m.Host.Meta().IsLeader() {
			out = append(out, i)
		}
	}
	if len(out) != len(c.members)-1 {
		c.t.Fatalf("%d of %d members follow the metadata leader", len(out), len(c.members))
	}
	return out
}

// TestACLChangesHoldOnTheFollowerThatAnswered: goal — an ACL change is
// in force on the member that answered it as soon as it answers
// (read-your-writes), also when that member follows the metadata group's
// leader and forwarded the change: a token it created works there at
// once, a quota it set is enforced and listed there at once, a token it
// deleted is refused there at once. Method: an ACL cluster; on each
// metadata follower, several rounds of create-then-use, set-quota-then-
// acquire-past-it, delete-then-use, each second request sent the moment
// the first is answered.
func TestACLChangesHoldOnTheFollowerThatAnswered(t *testing.T) {
	c := startACLCluster(t)
	for _, f := range c.metaFollowers() {
		for round := range 3 {
			secret := fmt.Sprintf("follower-%d-round-%d-secret", f, round)
			var tok api.Token
			if code, e, _ := call(t, http.MethodPost, c.url(f)+api.PathACLToken, rootSecret,
				api.Token{Secret: secret, Namespaces: []string{"rw"}, Rights: []string{"acquire", "read"}}, &tok); code != http.StatusOK {
				t.Fatalf("member %d: create token: %d %+v", f, code, e)
			}
			resource := fmt.Sprintf("rw:%d-%d", f, round)
			if _, code, e, _ := c.acquire(f, secret, resource, "w", 0); code != http.StatusOK {
				t.Errorf("member %d round %d: token it just created: %d %+v", f, round, code, e)
			}

			ns := fmt.Sprintf("quota%d%d", f, round)
			q := api.Quota{Namespace: ns, MaxHeld: 2}
			if code, e, _ := call(t, http.MethodPost, c.url(f)+api.PathACLQuota, rootSecret, q, nil); code != http.StatusOK {
				t.Fatalf("member %d: set quota: %d %+v", f, code, e)
			}
			var quotas api.QuotaList
			if code, e, _ := call(t, http.MethodGet, c.url(f)+api.PathACLQuotas, rootSecret, nil, &quotas); code != http.StatusOK ||
				!strings.Contains(fmt.Sprint(quotas.Quotas), ns) {
				t.Errorf("member %d round %d: quotas right after setting %s: %d %+v %+v", f, round, ns, code, e, quotas)
			}
			var codes []int
			for i := range 3 {
				_, code, _, _ := c.acquire(f, rootSecret, fmt.Sprintf("%s:{t}%d", ns, i), "w", 0)
				codes = append(codes, code)
			}
			if fmt.Sprint(codes) != fmt.Sprint([]int{200, 200, http.StatusTooManyRequests}) {
				t.Errorf("member %d round %d: 3 acquires right after max_held 2: %v", f, round, codes)
			}

			if code, e, _ := call(t, http.MethodPost, c.url(f)+api.PathACLTokenDelete, rootSecret, api.TokenDelete{ID: tok.ID}, nil); code != http.StatusOK {
				t.Fatalf("member %d: delete token: %d %+v", f, code, e)
			}
			if _, code, e, _ := c.acquire(f, secret, resource+"x", "w", 0); code != http.StatusUnauthorized {
				t.Errorf("member %d round %d: token it just deleted: %d %+v", f, round, code, e)
			}
		}
	}
}
