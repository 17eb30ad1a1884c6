# Run by each learner's kernel at start (kernel_wrapper.py passes it as IPKernelApp.exec_files).
#
# * Out of memory: the usual traceback, then one line saying that the workshop's cap per kernel was reached.
# * ``AMP_KERNEL_GPU_FRACTION``: ``torch.cuda.set_per_process_memory_fraction`` on every visible GPU, so that one
#   learner's kernel cannot take the memory of a GPU that the room shares (a CUDA allocation past it raises
#   ``torch.OutOfMemoryError`` in that learner's cell). torch is imported only when the variable is set.
#
# Everything is defined inside a function and deleted, so the learner's namespace stays as in a plain kernel.
# (Comments, not a docstring: a module docstring would land in the learner's namespace as __doc__.)


def _amp_workshop_setup():
    import os
    import sys

    shell = get_ipython()  # noqa: F821  (IPython runs this file in the kernel's namespace)
    cap = os.environ.get("AMP_KERNEL_MEMORY_LIMIT_BYTES")
    fraction = os.environ.get("AMP_KERNEL_GPU_FRACTION")
    if fraction:
        import torch

        if torch.cuda.is_available():
            for device in range(torch.cuda.device_count()):
                torch.cuda.set_per_process_memory_fraction(float(fraction), device)

    def out_of_memory(exc):
        text = str(exc)
        return isinstance(exc, MemoryError) or "can't allocate memory" in text or "CUDA out of memory" in text

    def handler(self, etype, value, tb, tb_offset=None):
        self.showtraceback((etype, value, tb), tb_offset=tb_offset)
        if out_of_memory(value):
            where = "GPU" if "CUDA" in str(value) else "memory"
            limit = (
                f"{float(fraction):.0%} of the GPU's memory (AMP_KERNEL_GPU_FRACTION)"
                if where == "GPU" and fraction
                else f"{int(cap) / 2**30:.2f} GiB (AMP_KERNEL_MEMORY_LIMIT)"
                if cap
                else "what the machine has"
            )
            print(
                f"Out of {where}: this workshop kernel may use {limit}. Use smaller sizes, or free tensors "
                "(del x) and restart the kernel. The kernel is still running.",
                file=sys.stderr,
            )

    shell.set_custom_exc((MemoryError, RuntimeError), handler)


_amp_workshop_setup()
del _amp_workshop_setup
