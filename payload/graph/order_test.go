package graph

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestByNumberAndComponent(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		want  [][][]string
	}{
		{name: "empty", files: nil, want: nil},
		{name: "single unnumbered task", files: []string{"a"}, want: nil},
		{name: "single numbered task", files: []string{"0000_01_x-y-z_file1"}, want: nil},
		{name: "no recognizable groups", files: []string{"a", "b", "c"}, want: [][][]string{{{"a", "b", "c"}}}},
		{
			name:  "one component in one node",
			files: []string{"0000_01_x-y-z_file1", "0000_01_x-y-z_file2"},
			want:  [][][]string{{{"0000_01_x-y-z_file1", "0000_01_x-y-z_file2"}}},
		},
		{
			name:  "unnumbered around numbered merge",
			files: []string{"a", "0000_01_x-y-z_file1", "c"},
			want:  [][][]string{{{"a", "0000_01_x-y-z_file1", "c"}}},
		},
		{
			name:  "two components of one level in parallel",
			files: []string{"0000_01_a-b-c_file1", "0000_01_x-y-z_file2"},
			want:  [][][]string{{{"0000_01_a-b-c_file1"}, {"0000_01_x-y-z_file2"}}},
		},
		{
			name:  "a level interrupted by an unnumbered file",
			files: []string{"0000_01_a-b-c_file1", "0000_01_x-y-z_file1", "0000_01_x-y-z_file2", "a", "0000_01_x-y-z_file2", "0000_01_x-y-z_file3"},
			want: [][][]string{
				{{"0000_01_a-b-c_file1"}, {"0000_01_x-y-z_file1", "0000_01_x-y-z_file2"}},
				{{"a", "0000_01_x-y-z_file2", "0000_01_x-y-z_file3"}},
			},
		},
		{
			name:  "levels compare as numbers",
			files: []string{"0000_05_a_0", "0000_5_b_0", "0000_10_a_0"},
			want:  [][][]string{{{"0000_05_a_0"}, {"0000_5_b_0"}}, {{"0000_10_a_0"}}},
		},
		{
			name:  "unsorted components of a level are gathered in input order",
			files: []string{"0000_01_a_1", "0000_01_b_1", "0000_01_a_2"},
			want:  [][][]string{{{"0000_01_a_1", "0000_01_a_2"}, {"0000_01_b_1"}}},
		},
		{
			name:  "unsorted levels keep input order",
			files: []string{"0000_20_a_0", "0000_10_a_0", "0000_20_b_0"},
			want:  [][][]string{{{"0000_20_a_0", "0000_10_a_0", "0000_20_b_0"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, stepsView(byNumberAndComponent(pods(tt.files...))))
		})
	}
}

func TestByNumberAndComponentLabelsNodes(t *testing.T) {
	steps := byNumberAndComponent(pods("0000_05_a_0", "0000_05_b_0", "x"))
	assert.Equal(t, 5, steps[0][1].runLevel)
	assert.Equal(t, "b", steps[0][1].component)
	assert.Equal(t, -1, steps[1][0].runLevel)
	assert.Equal(t, "", steps[1][0].component)
}

func TestFlattenByNumberAndComponent(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		want  [][][]string
	}{
		{name: "empty", files: nil, want: nil},
		{name: "single", files: []string{"a"}, want: nil},
		{name: "no recognizable groups", files: []string{"a", "b", "c"}, want: [][][]string{{{"a"}, {"b"}, {"c"}}}},
		{
			name:  "one component",
			files: []string{"0000_01_x-y-z_file1", "0000_01_x-y-z_file2"},
			want:  [][][]string{{{"0000_01_x-y-z_file1", "0000_01_x-y-z_file2"}}},
		},
		{
			name:  "unnumbered around numbered",
			files: []string{"a", "0000_01_x-y-z_file1", "c"},
			want:  [][][]string{{{"a"}, {"0000_01_x-y-z_file1"}, {"c"}}},
		},
		{
			name:  "interrupted level",
			files: []string{"0000_01_a-b-c_file1", "0000_01_x-y-z_file1", "0000_01_x-y-z_file2", "a", "0000_01_x-y-z_file2", "0000_01_x-y-z_file3"},
			want: [][][]string{{
				{"0000_01_a-b-c_file1"}, {"0000_01_x-y-z_file1", "0000_01_x-y-z_file2"}, {"a"}, {"0000_01_x-y-z_file2", "0000_01_x-y-z_file3"},
			}},
		},
		{
			name:  "same component in two levels is two nodes",
			files: []string{"0000_01_a-b-c_file1", "0000_01_x-y-z_file1", "0000_01_x-y-z_file2", "0000_02_x-y-z_file2", "0000_02_x-y-z_file3"},
			want: [][][]string{{
				{"0000_01_a-b-c_file1"}, {"0000_01_x-y-z_file1", "0000_01_x-y-z_file2"}, {"0000_02_x-y-z_file2", "0000_02_x-y-z_file3"},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, stepsView(flattenByNumberAndComponent(pods(tt.files...))))
		})
	}
}

// fixedSteps is a breakFunc returning one step per size, of single-task nodes named n0, n1, …
func fixedSteps(sizes ...int) breakFunc {
	return func([]*Task) [][]*taskNode {
		steps := make([][]*taskNode, len(sizes))
		for i, size := range sizes {
			steps[i] = []*taskNode{}
			for k := range size {
				steps[i] = append(steps[i], &taskNode{tasks: pods(fmt.Sprintf("n%d", k))})
			}
		}
		return steps
	}
}

func names(n int, order ...int) [][]string {
	out := make([][]string, 0, n)
	for _, k := range order {
		out = append(out, []string{fmt.Sprintf("n%d", k)})
	}
	return out
}

func TestShiftOrder(t *testing.T) {
	tests := []struct {
		name         string
		sizes        []int
		step, stride int
		want         [][][]string
	}{
		{name: "no shift", sizes: []int{3}, step: 0, stride: 8, want: [][][]string{names(3, 0, 1, 2)}},
		{name: "short step shifts by step", sizes: []int{5}, step: 2, stride: 8, want: [][][]string{names(5, 2, 3, 4, 0, 1)}},
		{name: "short step wraps", sizes: []int{3}, step: 7, stride: 8, want: [][][]string{names(3, 1, 2, 0)}},
		{name: "long step shifts by step*len/stride", sizes: []int{10}, step: 3, stride: 8, want: [][][]string{names(10, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2)}},
		{name: "empty step does not divide by zero", sizes: []int{0, 2}, step: 1, stride: 8, want: [][][]string{nil, names(2, 1, 0)}},
		{name: "negative step rotates right", sizes: []int{3}, step: -1, stride: 8, want: [][][]string{names(3, 2, 0, 1)}},
		{name: "zero stride counts as one", sizes: []int{4}, step: 1, stride: 0, want: [][][]string{names(4, 0, 1, 2, 3)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, stepsView(shiftOrder(fixedSteps(tt.sizes...), tt.step, tt.stride)(nil)))
		})
	}
}

func TestPermuteOrder(t *testing.T) {
	permute := func(seed uint64) [][][]string {
		return stepsView(permuteOrder(fixedSteps(6, 1, 0), rand.New(rand.NewPCG(seed, 0)))(nil))
	}
	assert.Equal(t, [][][]string{names(6, 1, 5, 4, 2, 0, 3), names(1, 0), nil}, permute(1))
	assert.Equal(t, permute(1), permute(1), "the same seed gives the same order")
	assert.NotEqual(t, permute(1), permute(2))
	assert.Equal(t, [][][]string{names(6, 0, 1, 2, 3, 4, 5), names(1, 0), nil}, stepsView(permuteOrder(fixedSteps(6, 1, 0), nil)(nil)))
}
