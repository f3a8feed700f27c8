"""A training loop over an iterable that is not a DataLoader, given to
headspace_hook.wrap() once, before its epochs: each batch of --batches an
epoch sleeps --batch-ms to be made, each step sleeps --step-ms. --record
FILE gets a line an epoch: the batches it had. --wrap-each wraps the
iterable again each epoch instead."""
import argparse
import time


class Batches:
    def __init__(self, n, ms):
        self.n, self.ms = n, ms

    def __len__(self):
        return self.n

    def __iter__(self):
        for i in range(self.n):
            time.sleep(self.ms / 1000)
            yield [i] * 4


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batches", type=int, default=5)
    p.add_argument("--batch-ms", type=float, default=4)
    p.add_argument("--step-ms", type=float, default=2)
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--record", default="")
    p.add_argument("--wrap-each", action="store_true")
    a = p.parse_args()
    src = Batches(a.batches, a.batch_ms)
    wrap = lambda x: x  # noqa: E731
    try:
        import headspace_hook
        wrap = headspace_hook.wrap
    except ImportError:
        pass
    batches = wrap(src)
    rec = open(a.record, "w") if a.record else None
    for _ in range(a.epochs):
        n = 0
        for b in (wrap(src) if a.wrap_each else batches):
            if len(b) != 4:
                raise SystemExit("batch %r: want 4 items" % (b,))
            time.sleep(a.step_ms / 1000)
            n += 1
        if rec:
            rec.write("%d\n" % n)
            rec.flush()


if __name__ == "__main__":
    main()
