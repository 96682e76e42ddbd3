package crtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/converge-dev/converge"
)

// WithGenerations returns c with metadata.generation kept as the API server
// keeps it for custom resources, for the kinds of objs (every kind when objs
// is empty): a Create, and an Apply or a server-side apply Patch that creates
// the object, sets it to 1, and an Update, Patch or Apply that changes
// anything but metadata and status adds one to it; status writes and changes
// of metadata alone leave it as it is. controller-runtime's fake client never
// moves a generation, and the engines act on generations: an add-on whose
// spec changed under the same generation is not upgraded, and nothing says
// so. Objects given to the fake client's builder (WithObjects) keep the
// generation they carry: give them one.
//
// A Patch or Apply that changes the spec, or creates the object, is two
// writes on the fake client, the write and then the generation, so the
// resource version moves twice. A kind of
// objs that c's scheme does not know makes every write fail with an error
// matching converge.ErrInvalid.
func WithGenerations(c client.WithWatch, objs ...client.Object) client.WithWatch {
	g := &generations{kinds: map[schema.GroupKind]bool{}}
	for _, o := range objs {
		gvk, err := c.GroupVersionKindFor(o)
		if err != nil {
			g.err = converge.Invalidf("crtest", "WithGenerations arguments", "kind of %T: %v", o, err)
			break
		}
		g.kinds[gvk.GroupKind()] = true
	}
	return interceptor.NewClient(c, interceptor.Funcs{Create: g.create, Update: g.update, Patch: g.patch, Apply: g.apply})
}

// generations is WithGenerations' interceptor.
type generations struct {
	kinds map[schema.GroupKind]bool // empty: every kind
	err   error                     // of a kind it could not resolve
}

// kept reports whether obj's generation is kept.
func (g *generations) kept(c client.WithWatch, obj client.Object) (bool, error) {
	if g.err != nil {
		return false, g.err
	}
	if len(g.kinds) == 0 {
		return true, nil
	}
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return false, nil // the write itself reports what is wrong with obj
	}
	return g.kinds[gvk.GroupKind()], nil
}

func (g *generations) create(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
	kept, err := g.kept(c, obj)
	if err != nil {
		return err
	}
	if kept {
		obj.SetGeneration(1)
	}
	return c.Create(ctx, obj, opts...)
}

func (g *generations) update(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
	kept, err := g.kept(c, obj)
	if err != nil {
		return err
	}
	if kept {
		stored := obj.DeepCopyObject().(client.Object)
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), stored); err == nil {
			next, err := nextGeneration(stored, obj)
			if err != nil {
				return err
			}
			obj.SetGeneration(next)
		}
	}
	return c.Update(ctx, obj, opts...)
}

func (g *generations) patch(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	kept, err := g.kept(c, obj)
	if err != nil {
		return err
	}
	if !kept {
		return c.Patch(ctx, obj, patch, opts...)
	}
	stored, err := storedCopy(ctx, c, obj)
	if err != nil {
		return c.Patch(ctx, obj, patch, opts...)
	}
	if err := c.Patch(ctx, obj, patch, opts...); err != nil {
		return err
	}
	return setGeneration(ctx, c, stored, obj, (&client.PatchOptions{}).ApplyOptions(opts).DryRun != nil)
}

func (g *generations) apply(ctx context.Context, c client.WithWatch, config runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	obj, err := objectOf(config)
	if err != nil {
		return c.Apply(ctx, config, opts...) // the write itself reports what is wrong with config
	}
	kept, err := g.kept(c, obj)
	if err != nil {
		return err
	}
	if !kept {
		return c.Apply(ctx, config, opts...)
	}
	stored, err := storedCopy(ctx, c, obj)
	if err != nil {
		return c.Apply(ctx, config, opts...)
	}
	if err := c.Apply(ctx, config, opts...); err != nil {
		return err
	}
	if (&client.ApplyOptions{}).ApplyOptions(opts).DryRun != nil {
		return nil // the fake client answers a dry run with the configuration it was given
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return err
	}
	if err := setGeneration(ctx, c, stored, obj, false); err != nil {
		return err
	}
	return copyInto(config, obj)
}

// storedCopy returns obj as c stores it, nil when c holds no such object.
func storedCopy(ctx context.Context, c client.WithWatch, obj client.Object) (client.Object, error) {
	stored := obj.DeepCopyObject().(client.Object)
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), stored)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return stored, err
}

// setGeneration gives written, the object a write made of stored (nil when
// the write created it), its generation: 1 for a new object, else
// nextGeneration's. It writes it unless written has it already or the write
// was a dry run, which answers with the generation it would write.
func setGeneration(ctx context.Context, c client.WithWatch, stored, written client.Object, dryRun bool) error {
	next := int64(1)
	if stored != nil {
		var err error
		if next, err = nextGeneration(stored, written); err != nil {
			return err
		}
	}
	if next == written.GetGeneration() {
		return nil
	}
	written.SetGeneration(next)
	if dryRun {
		return nil
	}
	return c.Update(ctx, written)
}

// objectOf is the object an apply configuration names, as unstructured.
func objectOf(config runtime.ApplyConfiguration) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(config)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	return obj, nil
}

// copyInto writes obj into config, as an Apply answers with the object it
// wrote.
func copyInto(config runtime.ApplyConfiguration, obj client.Object) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("crtest: WithGenerations: %T: %w", obj, err)
	}
	if err := json.Unmarshal(data, config); err != nil {
		return fmt.Errorf("crtest: WithGenerations: %T: %w", config, err)
	}
	return nil
}

// nextGeneration is the generation the API server gives after, written over
// stored: one more than stored's when anything but metadata and status
// changed, else stored's.
func nextGeneration(stored, after client.Object) (int64, error) {
	before, err := specOf(stored)
	if err != nil {
		return 0, err
	}
	now, err := specOf(after)
	if err != nil {
		return 0, err
	}
	if bytes.Equal(before, now) {
		return stored.GetGeneration(), nil
	}
	return stored.GetGeneration() + 1, nil
}

// specOf is obj without its type, metadata and status, as JSON (whose map
// keys are sorted, so that equal contents give equal bytes).
func specOf(obj client.Object) ([]byte, error) {
	var content map[string]any
	if u, ok := obj.(runtime.Unstructured); ok {
		content = u.UnstructuredContent()
	} else {
		var err error
		if content, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
			return nil, fmt.Errorf("crtest: WithGenerations: %T: %w", obj, err)
		}
	}
	rest := make(map[string]any, len(content))
	for k, v := range content {
		switch k {
		case "apiVersion", "kind", "metadata", "status":
		default:
			rest[k] = v
		}
	}
	b, err := json.Marshal(rest)
	if err != nil {
		return nil, fmt.Errorf("crtest: WithGenerations: %T: %w", obj, err)
	}
	return b, nil
}
