# SPDX-License-Identifier: MIT
# docs area: man pages of the queue engine (queues, buffers, kernels,
# barriers, stats), the devq(7) overview, and the test that keeps every
# public function documented and every page clean under groff.
man3_MANS += \
	man/man3/devq_queue.3 \
	man/man3/devq_queue_create.3 man/man3/devq_queue_destroy.3 \
	man/man3/devq_queue_wait.3 man/man3/devq_queue_signal.3 \
	man/man3/devq_queue_exec.3 \
	man/man3/devq_queue_copy.3 man/man3/devq_queue_fill.3 \
	man/man3/devq_queue_write.3 man/man3/devq_queue_read.3 \
	man/man3/devq_queue_barrier.3 man/man3/devq_queue_host_fn.3 \
	man/man3/devq_queue_submit.3 man/man3/devq_queue_finish.3 \
	man/man3/devq_barrier.3 man/man3/devq_device_synchronize.3 \
	man/man3/devq_kernel_load.3 man/man3/devq_kernel_load_fn.3 man/man3/devq_kernel_destroy.3 \
	man/man3/devq_buffer_alloc.3 man/man3/devq_buffer_free.3 \
	man/man3/devq_buffer_size.3 man/man3/devq_buffer_device_ptr.3 \
	man/man3/devq_buffer_host_ptr.3 man/man3/devq_buffer_status.3 \
	man/man3/devq_queue_timestamp.3 man/man3/devq_timestamp_elapsed.3 \
	man/man3/devq_timestamp_destroy.3 \
	man/man3/devq_stats_get.3 \
	man/man3/devq_signal_set_name.3 man/man3/devq_queue_set_name.3 \
	man/man3/devq_buffer_set_name.3 man/man3/devq_kernel_set_name.3 \
	man/man3/devq_queue_begin_capture.3 man/man3/devq_queue_end_capture.3 \
	man/man3/devq_graph_instantiate.3 man/man3/devq_graph_destroy.3 man/man3/devq_graph_exec_destroy.3 \
	man/man3/devq_graph_submit.3 man/man3/devq_graph_exec_set_arg.3 \
	man/man3/devq_graph_exec_set_buffer.3 man/man3/devq_graph_exec_set_value.3
man7_MANS += man/man7/devq.7

