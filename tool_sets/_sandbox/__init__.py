"""Shared sandboxes for tools that touch the machine: SQL (``sql``, run in ``sql_worker`` processes), file paths
(``paths``) and processes (``process``, in Linux namespaces set up by ``namespaces`` where the kernel allows).
They bound what a model's call can do; none is a security boundary for the file system."""
