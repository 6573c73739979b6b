"""Shared sandboxes for tools that touch the machine: SQL (``sql``, run in ``sql_worker`` processes), file paths
(``paths``) and processes (``process``, in Linux namespaces set up by ``namespaces`` where the kernel allows).
They bound what a model's call can do. With namespaces, a program cannot write to the host or change its limits;
none confines what it can read (docs/guide/security.md)."""
