/* SPDX-License-Identifier: MIT */
/*
 * ssq_mem_reg_fd on test_device(): a writable registration of a file on
 * a disk-backed file system (here /tmp: ext4 or overlay, never tmpfs on
 * the machines this runs on, which the test checks) is refused with
 * -EOPNOTSUPP and a reason, while a memfd (shmem) registers.
 *
 * Hardware review 2026-11-28 R3: since Linux 6.5 the kernel refuses
 * long-term writable pins of files it tracks dirty pages of (mm/gup.c,
 * writable_file_mapping_allowed), so backend_mlx5 mapped and tried to pin
 * such a file and failed at ibv_reg_mr with a bare EFAULT; it now checks
 * fstatfs first (tmpfs or hugetlbfs only). The emulated device refuses
 * every disk file already.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include "ctrl_flow.h"

int main(void)
{
	struct ssq_buf a = { 0 }, b = { 0 };
	struct ssq_client *c = NULL;
	struct ssq_queue *q = NULL;
	char path[] = "/tmp/ssq-disk-file-XXXXXX";
	struct statfs fs;
	struct ssq_mr mr;
	int fd, mfd, rc;
	pid_t d;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	fd = mkstemp(path);
	if (fd < 0 || ftruncate(fd, 8192) || fstatfs(fd, &fs)) {
		perror(path);
		return 1;
	}
	unlink(path);
	if (fs.f_type == TMPFS_MAGIC || fs.f_type == HUGETLBFS_MAGIC)
		SKIP("/tmp is tmpfs here: no disk-backed file to register");
	d = flow_start_q0("disk-file", &c, &q, &a, &b);
	CHECK(d >= 0, "ssqd on %s serves a client", test_device());
	if (d < 0)
		return test_exit("ctrl_mem_disk_file");
	rc = ssq_mem_reg_fd(c, fd, 0, 8192,
	                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &mr);
	CHECK(rc == -EOPNOTSUPP,
	      "a disk file (f_type 0x%lx) registered writable: %d (%s)",
	      (unsigned long)fs.f_type, rc, ssq_client_error(c));
	printf("a disk file, writable, on %s: %d: %s\n", test_device(), rc,
	       ssq_client_error(c));
	mfd = memfd_create("ssq-disk-file", MFD_CLOEXEC);
	CHECK(mfd >= 0 && ftruncate(mfd, 8192) == 0, "a memfd");
	rc = ssq_mem_reg_fd(c, mfd, 0, 8192,
	                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &mr);
	CHECK(rc == 0, "a memfd registered writable: %d (%s)", rc, ssq_client_error(c));
	if (!rc)
		CHECK(ssq_mem_dereg(c, &mr) == 0, "given back: %s", ssq_client_error(c));
	close(mfd);
	close(fd);
	ssq_client_close(c);
	t_ssqd_stop(d, NULL, sock_path);
	return test_exit("ctrl_mem_disk_file");
}
