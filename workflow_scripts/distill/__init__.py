"""Task-agnostic distillation of biomedical teachers into smaller students (Lewis et al.; Rohanian et al.)."""
