"""The fusion-anomaly recipe from the editor: `workspace/executeCommand` handlers (all off,
restore, compare, cancel, apply suspects, show report) and the annotations a comparison leaves
on open configurations. Logic lives in `fusion_switch.workflow` (pure); this package talks to
the client: versioned edits, work-done progress, messages, refreshes."""
