"""Reading finished runs: ``toolsel eval compare`` (``compare``), ``toolsel report`` (tables, figures and a
self-contained HTML page: ``tables``, ``figures``, ``html``) and ``toolsel view`` (the MLflow UI: ``view``)."""
