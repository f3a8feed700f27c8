// Package sim is a discrete-event simulation of a PyTorch-style input
// pipeline: N loader workers, each loading one whole batch at a time, feeding
// a model that steps on the batches in order. It reproduces and extends the
// animations of "Visualizing data loaders to diagnose deep learning
// pipelines" (Jungkyu Park), where a training loop bottlenecked by loading
// halts every n batches, n being the number of loader processes.
//
//	r, err := sim.Run(sim.Config{Loaders: 7, Load: 2 * time.Second,
//		Step: 100 * time.Millisecond, Duration: 30 * time.Second})
//	r.Summary(os.Stdout)                     // 98 batches, halts every 7
//	r.Timeline.WritePNG("run.png", 1200, 400) // Gantt chart
//	r.WriteGIF("run.gif", sim.GIFOptions{})   // the post's animation
//
// The simulation is single-threaded and deterministic: time is continuous
// (nanosecond time.Durations), the state only changes at events (a load or
// a step finishing), and randomness comes from math/rand/v2 PCG streams
// seeded from Config.Seed. It starts no goroutines.
//
// # Rules
//
// Dispatch follows torch.utils.data.DataLoader with num_workers = Loaders
// and prefetch_factor = Prefetch (default 2):
//
//  1. At t = 0 the batch indices 0 … Prefetch·Loaders−1 are dispatched.
//     Batch k always goes to loader k mod Loaders (PyTorch's round-robin
//     over its worker index queues).
//  2. Each time the model takes a batch, the next undispatched index is
//     dispatched. As indices are dispatched and taken in order, the new
//     index goes to the loader that made the batch just taken, and every
//     loader always has exactly Prefetch outstanding batches: dispatched
//     but not started, loading, or loaded and not yet taken.
//  3. A loader loads its batches one at a time, in index order. It starts
//     the next at the instant the previous one finishes, or at the instant
//     one is dispatched to it if it was idle; so at t = 0 loader i starts
//     batch i. A loader is idle only when all its outstanding batches are
//     loaded and waiting for the model.
//  4. The model takes batches strictly in index order (PyTorch reorders
//     out-of-order results), at the instant batch "next" is loaded and the
//     model is idle. Taking a batch removes it from the ready queue; the
//     model's step (forward+backward) then lasts one step time.
//  5. Events at the same instant are processed in this order: loads
//     finishing (in loader order, each loader starting its next batch),
//     then the step finishing, then the model taking the next batch. A
//     batch loaded at the instant a step ends is taken at once.
//  6. The run covers [0, Duration]. Events at exactly Duration are
//     processed; nothing starts at or after Duration. A batch counts as
//     completed (Result.Batches) when its step ends at or before Duration.
//     Loads and steps in progress at Duration are cut there in the
//     timeline.
//
// Transfer times between processes and devices are ignored, as in the post.
//
// # Durations
//
// The load time of batch k is drawn when it is dispatched, i.e. in index
// order, from its own stream, so it depends only on the seed, k and the
// distribution — not on Loaders, Prefetch or the step times. Step times are
// drawn in index order from a second stream.
//
//   - "constant": every load takes exactly Load.
//   - "normal": Normal(Load, LoadStddev), resampled until positive (not
//     truncated at 0, which would pile probability onto zero-length loads).
//     Resampling raises the mean slightly: by 2.8% of Load at
//     LoadStddev = Load/2, 0.15% at Load/3.
//   - "lognormal": exp(N(μ, σ²)) with σ² = ln(1 + LoadStddev²/Load²) and
//     μ = ln(Load) − σ²/2, so that the load time itself has mean Load and
//     standard deviation LoadStddev.
//
// Step times are Step, or Normal(Step, StepStddev) resampled until positive.
// Every duration is at least 1ns and at most 2⁶² ns (about 146 years).
//
// # Reproducing the post
//
// Seven loaders, 100 ms steps, 30 s:
//
//   - Constant 2 s loads give exactly 98 batches: batches 7r … 7r+6 are
//     all loaded at 2(r+1) s and stepped back to back, so round r ends at
//     2(r+1)+0.7 s; the 14th round ends at 28.7 s and the 15th is loaded at
//     exactly 30 s, too late. The count does not hinge on the boundary
//     rules (inclusive or exclusive end, or loads starting a 100 ms tick
//     late all give 98). The model halts every 7 batches, for 1.3 s.
//   - The 700 ms and 350 ms runs need varying load times: constant loads
//     give 293 and 296. Normal load times with a standard deviation of 22%
//     of the mean give, averaged over 20 seeds (1 … 20), 275.9 (±5.8 across
//     seeds) at 700 ms and 296.2 (±0.7) at 350 ms; the post reports 275 and
//     295. Lognormal with the same spread is indistinguishable (274.9 and
//     296.2). At 350 ms the count barely depends on the spread — it is set
//     by the model — and the remaining batch is plausibly the post's 100 ms
//     ticks delaying the first batch by one tick. The 2 s run of the
//     post must have had (nearly) constant loads: at 22% spread it would
//     average 94 batches, and only 2 of the 20 seeds keep the regular
//     every-7 halting.
//
// # Results
//
// Result holds the counts (completed, loaded, consumed, queued, loading),
// the model's idle fraction and the time-weighted mean ready-queue length
// over [0, Duration], a timeline.Timeline with one track per loader and a
// "model" track (every span coloured by the loader of its batch), and the
// event log from which WriteGIF rebuilds the state at each 100 ms tick.
// Halting finds the model's idle gaps and the number of batches between
// them; Summary prints all of it.
package sim
