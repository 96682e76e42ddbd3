package crconverge

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/rollout"
)

// knobs has a field of every kind a policy holds.
type knobs struct {
	Count   int32
	Name    string
	On      bool
	Limit   *int32
	List    []string
	Map     map[string]string
	Backoff converge.Backoff
	Wait    metav1.Duration
	At      metav1.Time
	hidden  int
}

func (k *knobs) DeepCopy() *knobs {
	out := *k
	if k.Limit != nil {
		l := *k.Limit
		out.Limit = &l
	}
	out.List = append([]string(nil), k.List...)
	if k.Map != nil {
		out.Map = map[string]string{}
		for key, v := range k.Map {
			out.Map[key] = v
		}
	}
	return &out
}

func TestUnderDefault(t *testing.T) {
	two, five := int32(2), int32(5)
	def := knobs{Count: 3, Name: "default", On: true, Limit: &two, List: []string{"d"}, Map: map[string]string{"k": "d"},
		Backoff: converge.Backoff{Initial: metav1.Duration{Duration: time.Second}, Max: metav1.Duration{Duration: time.Minute}},
		Wait:    metav1.Duration{Duration: time.Hour}, At: metav1.NewTime(t0), hidden: 7}
	tests := []struct {
		name string
		own  knobs
		want knobs
	}{
		{name: "a zero resource policy is the default", own: knobs{}, want: def},
		{name: "a number, a string and a bool set by the resource are kept",
			own:  knobs{Count: 1, Name: "own", On: true},
			want: knobs{Count: 1, Name: "own", On: true, Limit: &two, List: []string{"d"}, Map: map[string]string{"k": "d"}, Backoff: def.Backoff, Wait: def.Wait, At: def.At}},
		{name: "a pointer set by the resource is kept whole",
			own:  knobs{Limit: &five},
			want: knobs{Count: 3, Name: "default", On: true, Limit: &five, List: []string{"d"}, Map: map[string]string{"k": "d"}, Backoff: def.Backoff, Wait: def.Wait, At: def.At}},
		{name: "a slice and a map set by the resource are kept whole",
			own:  knobs{List: []string{"a", "b"}, Map: map[string]string{"o": "o"}},
			want: knobs{Count: 3, Name: "default", On: true, Limit: &two, List: []string{"a", "b"}, Map: map[string]string{"o": "o"}, Backoff: def.Backoff, Wait: def.Wait, At: def.At}},
		{name: "a struct set in part takes the default's other fields",
			own: knobs{Backoff: converge.Backoff{Max: metav1.Duration{Duration: 2 * time.Minute}, FactorPercent: 200}},
			want: knobs{Count: 3, Name: "default", On: true, Limit: &two, List: []string{"d"}, Map: map[string]string{"k": "d"}, Wait: def.Wait, At: def.At,
				Backoff: converge.Backoff{Initial: metav1.Duration{Duration: time.Second}, Max: metav1.Duration{Duration: 2 * time.Minute}, FactorPercent: 200}}},
		{name: "a time set by the resource is kept whole",
			own:  knobs{At: metav1.NewTime(t0.Add(time.Hour))},
			want: knobs{Count: 3, Name: "default", On: true, Limit: &two, List: []string{"d"}, Map: map[string]string{"k": "d"}, Backoff: def.Backoff, Wait: def.Wait, At: metav1.NewTime(t0.Add(time.Hour))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := underDefault(tt.own, def)
			tt.want.hidden = got.hidden
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestUnderDefaultSharesNothingWithTheDefault(t *testing.T) {
	two := int32(2)
	def := knobs{Limit: &two, List: []string{"d"}, Map: map[string]string{"k": "d"}}
	got := underDefault(knobs{}, def)
	*got.Limit, got.List[0], got.Map["k"] = 9, "changed", "changed"
	assert.Equal(t, knobs{Limit: &two, List: []string{"d"}, Map: map[string]string{"k": "d"}}, def)
	assert.Equal(t, int32(2), two)
}

func TestUnderDefaultOfARolloutPolicy(t *testing.T) {
	def := rollout.Policy{MaxUnavailable: 2, Paused: true, InstallerBackoff: converge.Backoff{Initial: metav1.Duration{Duration: time.Minute}}}
	own := rollout.Policy{MaxUnavailable: 1, InstallerBackoff: converge.Backoff{Max: metav1.Duration{Duration: time.Hour}},
		OperandReadyTimeout: metav1.Duration{Duration: time.Minute}}
	assert.Equal(t, rollout.Policy{MaxUnavailable: 1, Paused: true, OperandReadyTimeout: metav1.Duration{Duration: time.Minute},
		InstallerBackoff: converge.Backoff{Initial: metav1.Duration{Duration: time.Minute}, Max: metav1.Duration{Duration: time.Hour}}},
		underDefault(own, def))
}
