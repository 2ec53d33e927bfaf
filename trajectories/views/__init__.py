"""HTML views of the trajectories app (session auth), one module per page
family: ``dashboard``, ``trajectories`` (list, detail, steps, group),
``impact``, ``judge`` (prompts and experiments), ``comments`` and
``reviewers``. The export page and its downloads are in trajectories.exports."""
