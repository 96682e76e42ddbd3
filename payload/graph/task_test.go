package graph

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewTasksNumbersItemsInOrder(t *testing.T) {
	a, b := &item{file: "a", kind: "Pod"}, &item{file: "b", kind: "Pod"}
	tasks := NewTasks([]Item{a, b})
	require.Len(t, tasks, 2)
	assert.Equal(t, 2, tasks[1].Index)
	assert.Equal(t, 2, tasks[1].Total)
	assert.Same(t, b, tasks[1].Item)
	assert.Equal(t, `pod "b" (2 of 2)`, tasks[1].String())
	assert.Equal(t, "task (0 of 0)", (*Task)(nil).String())
	assert.Equal(t, "task (3 of 4)", (&Task{Index: 3, Total: 4}).String())
}
