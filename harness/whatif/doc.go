// Package whatif is a CPU-budget model of the input pipeline, after the
// what-if analysis of DS-Analyzer (Mohan et al., VLDB 2021): from what one
// run measures — each stage's CPU time per sample, the upload and the
// device's step — it predicts steps/s for other core counts, worker counts
// and step times, names the resource that binds, and says how much of each
// stage's cost must go for the pipeline to stop binding.
//
// The model: a step needs Batch samples, and every sample costs each stage
// its CPU time (plus, for a stage that waits on storage, a wait that uses
// no CPU). Predicted steps/s is the smallest of
//
//   - the step: 1 / (step time × multiplier), the device's rate;
//   - the copy: 1 / upload time, the copy engine's rate;
//   - the cores: cores / (Batch × CPU per sample, all stages and the
//     host's own share together), what the host can feed;
//   - each stage's workers: workers / (Batch × (the stage's CPU + wait)
//     per sample), its parallelism capped by its goroutines.
//
// The smallest names the binding resource. The caching ladder reads a
// different quantity — how much throughput falls when a stage is added —
// and the two can disagree: when one stage holds most of the cores and a
// small one is added, the small one "tips it over" and the ladder blames
// it (document 003's caveat). Profile.Ladder predicts the ladder's levels
// with the model, so both readings come from the same costs.
//
// A Profile comes from one run (FromRun) or a saved file (Read, Write);
// Check sets a prediction beside a measurement.
package whatif
