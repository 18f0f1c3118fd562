"""A TCG guest that runs Linux device-mapper where the host kernel has none (see docs in image.py, vm.py)."""
