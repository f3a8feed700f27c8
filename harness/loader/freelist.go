package loader

// freelist recycles buffers without ever blocking: get makes a new buffer
// when none is free, put drops one when the list is full. How many buffers
// are alive is bounded by the pipeline's queues, not by the list.
type freelist[T any] struct {
	free  chan T
	alloc func() T
}

func newFreelist[T any](size int, alloc func() T) *freelist[T] {
	return &freelist[T]{free: make(chan T, size), alloc: alloc}
}

func (f *freelist[T]) get() T {
	select {
	case v := <-f.free:
		return v
	default:
		return f.alloc()
	}
}

func (f *freelist[T]) put(v T) {
	select {
	case f.free <- v:
	default:
	}
}
