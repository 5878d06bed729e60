"""From compared tensors to a verdict: which fusion rule introduced the error.

``attribution`` ranks rules from the comparison rows; ``summary`` writes ``summary.json``;
``report`` renders the self-contained ``report.html``. Diagnosis reads the engine's rows and the
graphs; the engine never imports it.
"""
