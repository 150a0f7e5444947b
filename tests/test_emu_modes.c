/* SPDX-License-Identifier: MIT */
/*
 * Device modes and fault injection, by API and by environment: sink mode
 * completes without touching data; err_at fails exactly the Nth WQE and
 * flushes the rest; a stalled device completes nothing until released;
 * delayed completions; bad environment values are refused by name; the
 * trace file holds decoded WQEs and CQEs.
 */
#include <unistd.h>
#include "helpers.h"
#include "emu/testbed_pvt.h"

/* Post @n signaled 64-byte WRITEs side 0 -> side 1 (distinct targets). */
static uint32_t post_writes(struct emu_tb *tb, int n)
{
	struct emu_tb_side *a = &tb->s[0], *b = &tb->s[1];
	uint32_t first = a->sq.pi;
	int k;

	for (k = 0; k < n; k++)
		a->sq.pi += ssq_prep_rdma_write(&a->sq, a->sq.pi, a->iova + 64 * k,
		                                a->key, 64, b->iova + 0x8000 + 64 * k,
		                                b->key, SSQ_WQE_SIGNALED);
	emu_tb_ring(tb, 0, a->sq.pi - 1);
	return first;
}

static void test_sink(void)
{
	struct emu_dev_attr da = { .mode = SSQ_EMU_SINK, .ignore_env = 1 };
	struct emu_tb_opts o = { .dev_attr = &da };
	struct emu_tb tb;
	struct emu_tb_side *a, *b;
	struct ssq_cqe c[4];
	struct ibv_sge rs;
	uint64_t v = 77;
	static uint8_t zero[256];
	uint32_t pi;

	CHECK(emu_tb_init(&tb, &o) == 0, "sink testbed");
	a = &tb.s[0];
	b = &tb.s[1];
	memset(a->mem, 0xab, 4096);
	memcpy(b->mem + 0x7000, &v, 8);
	rs = (struct ibv_sge){ b->iova + 0x1000, 256, b->key };
	ssq_rq_post_recv(&b->rq, &rs, 1);
	ssq_rq_ring(&b->rq);
	pi = post_writes(&tb, 1);
	a->sq.pi += ssq_prep_send(&a->sq, a->sq.pi, MLX5_OPCODE_SEND, a->iova, a->key,
	                          100, 0, SSQ_WQE_SIGNALED);
	a->sq.pi +=
	    ssq_prep_atomic(&a->sq, a->sq.pi, MLX5_OPCODE_ATOMIC_FA, a->iova + 0x100,
	                    a->key, b->iova + 0x7000, b->key, 1, 0, SSQ_WQE_SIGNALED);
	emu_tb_ring(&tb, 0, a->sq.pi - 1);
	CHECK(emu_tb_poll(&tb, &a->scq_v, c, 3) == 3, "sink: 3 requester CQEs");
	CHECK(c[0].status == IBV_WC_SUCCESS && c[0].wqe_counter == (uint16_t)pi,
	      "sink WRITE");
	CHECK(c[2].status == IBV_WC_SUCCESS && c[2].byte_len == 8, "sink atomic");
	CHECK(emu_tb_poll(&tb, &b->rcq_v, c, 1) == 1 &&
	          c[0].opcode == MLX5_CQE_RESP_SEND && c[0].byte_len == 100,
	      "sink SEND: receive CQE with the byte count");
	CHECK(!memcmp(b->mem + 0x8000, zero, 64), "sink: WRITE target untouched");
	CHECK(!memcmp(b->mem + 0x1000, zero, 100), "sink: receive buffer untouched");
	memcpy(&v, b->mem + 0x7000, 8);
	CHECK(v == 77, "sink: atomic target untouched");
	CHECK(a->mem[0x100] == 0xab, "sink: atomic result not written");
	/* Still checked: a bad rkey fails in sink mode too. */
	a->sq.pi += ssq_prep_rdma_write(&a->sq, a->sq.pi, a->iova, a->key, 64, b->iova,
	                                b->key ^ 0x200, 0);
	emu_tb_ring(&tb, 0, a->sq.pi - 1);
	CHECK(emu_tb_poll(&tb, &a->scq_v, c, 1) == 1 &&
	          c[0].syndrome == MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR,
	      "sink: bad rkey still REMOTE_ACCESS_ERR");
	emu_tb_fini(&tb);

	/* Switching modes at run time. */
	CHECK(emu_tb_init(&tb, NULL) == 0, "full testbed");
	CHECK(emu_set_mode(tb.dev, SSQ_EMU_SINK) == 0, "to sink");
	memset(tb.s[0].mem, 0x5a, 64);
	post_writes(&tb, 1);
	CHECK(emu_tb_poll(&tb, &tb.s[0].scq_v, c, 1) == 1, "CQE");
	CHECK(tb.s[1].mem[0x8000] == 0, "sink: no data");
	CHECK(emu_set_mode(tb.dev, SSQ_EMU_FULL) == 0, "to full");
	post_writes(&tb, 1);
	CHECK(emu_tb_poll(&tb, &tb.s[0].scq_v, c, 1) == 1, "CQE");
	CHECK(tb.s[1].mem[0x8000] == 0x5a, "full: data");
	CHECK(emu_set_mode(tb.dev, (enum emu_mode)7) == -EINVAL, "bad mode");
	emu_tb_fini(&tb);
}

/* err_at=@n: WQEs before it succeed, it fails with @synd / @vendor, the
 * rest flush. */
static void check_err_at(struct emu_tb *tb, int total, int n, uint8_t synd,
                         uint8_t vendor, const char *how)
{
	struct ssq_cqe c[16];
	uint32_t pi = post_writes(tb, total);
	int k, got = emu_tb_poll(tb, &tb->s[0].scq_v, c, total);

	CHECK(got == total, "%s: %d CQEs, want %d", how, got, total);
	for (k = 0; k < got; k++) {
		uint8_t want = k + 1 < n    ? 0
		               : k + 1 == n ? synd
		                            : MLX5_CQE_SYNDROME_WR_FLUSH_ERR;

		CHECK(c[k].syndrome == want && c[k].wqe_counter == (uint16_t)(pi + k),
		      "%s: CQE %d syndrome 0x%x, want 0x%x", how, k, c[k].syndrome, want);
		if (k + 1 == n)
			CHECK(c[k].vendor_err == vendor &&
			          c[k].opcode == MLX5_CQE_REQ_ERR,
			      "%s: vendor 0x%x", how, c[k].vendor_err);
	}
}

static void test_fault_api(void)
{
	struct emu_fault f = { .err_at = 3, .syndrome = 0x13, .vendor_err = 0x42 };
	struct emu_tb tb;

	CHECK(emu_tb_init(&tb, NULL) == 0, "testbed");
	CHECK(emu_set_fault(tb.dev, &f) == 0, "set fault");
	check_err_at(&tb, 6, 3, 0x13, 0x42, "api err_at=3");
	emu_tb_fini(&tb);

	/* The count restarts with each emu_set_fault. */
	CHECK(emu_tb_init(&tb, NULL) == 0, "testbed");
	post_writes(&tb, 2);
	emu_process(tb.dev, 64);
	f = (struct emu_fault){ .err_at = 1,
		                .syndrome = MLX5_CQE_SYNDROME_LOCAL_PROT_ERR };
	CHECK(emu_set_fault(tb.dev, &f) == 0, "set fault");
	{
		struct ssq_cqe c[2];

		CHECK(ssq_cq_poll(&tb.s[0].scq_v, c, 2) == 2 && !c[0].syndrome &&
		          !c[1].syndrome,
		      "earlier WQEs clean");
	}
	check_err_at(&tb, 3, 1, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, 0,
	             "api err_at=1 after 2");
	emu_tb_fini(&tb);
}

static void test_fault_env(void)
{
	struct emu_dev_attr da = { .ignore_env = 0 };
	struct emu_tb_opts o = { .dev_attr = &da };
	struct emu_tb tb;
	struct ssq_cqe c;
	int ret, k;

	setenv("SSQ_EMU_FAULT", "err_at=2,syndrome=0x15,vendor=7", 1);
	ret = emu_tb_init(&tb, &o);
	CHECK(ret == 0, "env testbed: %d", ret);
	if (!ret) {
		check_err_at(&tb, 4, 2, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, 7,
		             "env err_at=2");
		emu_tb_fini(&tb);
	}

	/* Stall: nothing completes until released. */
	setenv("SSQ_EMU_FAULT", "stall=1", 1);
	ret = emu_tb_init(&tb, &o);
	CHECK(ret == 0, "stalled testbed: %d", ret);
	if (!ret) {
		post_writes(&tb, 2);
		for (k = 0; k < 10; k++)
			CHECK(emu_process(tb.dev, 64) == 0, "stalled pass %d", k);
		CHECK(ssq_cq_poll(&tb.s[0].scq_v, &c, 1) == 0, "stalled: no CQE");
		CHECK(emu_stall(tb.dev, 0) == 0, "release");
		CHECK(emu_process(tb.dev, 64) == 2, "released: both run");
		CHECK(ssq_cq_poll(&tb.s[0].scq_v, &c, 1) == 1, "released: CQE");
		CHECK(emu_stall(tb.dev, 1) == 0, "stall again");
		post_writes(&tb, 1);
		CHECK(emu_process(tb.dev, 64) == 0, "stalled by API");
		emu_tb_fini(&tb);
	}

	/* Delay: the 3rd pass after the doorbell was seen executes it. */
	setenv("SSQ_EMU_FAULT", "delay=3", 1);
	ret = emu_tb_init(&tb, &o);
	CHECK(ret == 0, "delayed testbed: %d", ret);
	if (!ret) {
		post_writes(&tb, 1);
		for (k = 0; k < 3; k++) {
			CHECK(emu_process(tb.dev, 64) == 0, "delay pass %d", k);
			CHECK(ssq_cq_poll(&tb.s[0].scq_v, &c, 1) == 0,
			      "no CQE on pass %d", k);
		}
		CHECK(emu_process(tb.dev, 64) == 1, "pass 3 runs it");
		CHECK(ssq_cq_poll(&tb.s[0].scq_v, &c, 1) == 1 &&
		          c.status == IBV_WC_SUCCESS,
		      "delayed CQE");
		emu_tb_fini(&tb);
	}
	unsetenv("SSQ_EMU_FAULT");

	setenv("SSQ_EMU_MODE", "sink", 1);
	ret = emu_tb_init(&tb, &o);
	CHECK(ret == 0, "env sink testbed: %d", ret);
	if (!ret) {
		memset(tb.s[0].mem, 0x33, 64);
		post_writes(&tb, 1);
		CHECK(emu_tb_poll(&tb, &tb.s[0].scq_v, &c, 1) == 1, "env sink CQE");
		CHECK(tb.s[1].mem[0x8000] == 0, "env sink: no data");
		emu_tb_fini(&tb);
	}
	unsetenv("SSQ_EMU_MODE");
}

/* Open with @var=@val; it must fail with -EINVAL and name @val on stderr. */
static void bad_env(const char *var, const char *val)
{
	char path[] = "/tmp/ssq_emu_envXXXXXX", log[1024];
	struct emu_dev *dev = NULL;
	int fd = mkstemp(path), saved = dup(2), ret;
	ssize_t len;

	setenv(var, val, 1);
	dup2(fd, 2);
	ret = emu_open(&dev, NULL);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	unsetenv(var);
	len = pread(fd, log, sizeof(log) - 1, 0);
	close(fd);
	unlink(path);
	log[len > 0 ? len : 0] = '\0';
	CHECK(ret == -EINVAL, "%s=%s: open returned %d", var, val, ret);
	CHECK(strstr(log, var) && strstr(log, val), "%s=%s: message names it: '%s'", var,
	      val, log);
	if (!ret)
		emu_close(dev);
}

static void test_bad_env(void)
{
	struct emu_fault f;

	bad_env("SSQ_EMU_MODE", "fast");
	bad_env("SSQ_EMU_FAULT", "err_at=abc");
	bad_env("SSQ_EMU_FAULT", "err_at=0");
	bad_env("SSQ_EMU_FAULT", "syndrome=0x100");
	bad_env("SSQ_EMU_FAULT", "err_at=1,bogus=3");
	bad_env("SSQ_EMU_FAULT", "stall");
	bad_env("SSQ_EMU_FAULT", "delay=-1");
	bad_env("SSQ_EMU_POLL_NS", "fast");
	bad_env("SSQ_EMU_POLL_NS", "-1");
	bad_env("SSQ_EMU_POLL_NS", "100001");
	bad_env("SSQ_EMU_POLL_NS", "");
	CHECK(emu_parse_fault("err_at=5,syndrome=4,vendor=0x10,delay=2,stall=0", &f) ==
	              0 &&
	          f.err_at == 5 && f.syndrome == 4 && f.vendor_err == 0x10 &&
	          f.delay == 2 && !f.stall,
	      "parse a good fault string");
	CHECK(emu_parse_fault("", &f) == 0 && !f.err_at,
	      "empty fault string is no fault");
}

static int file_has(const char *text, const char *needle)
{
	return strstr(text, needle) != NULL;
}

static void test_trace(void)
{
	char path[] = "/tmp/ssq_emu_traceXXXXXX";
	struct emu_dev_attr da = { .ignore_env = 0 };
	struct emu_tb_opts o = { .dev_attr = &da };
	struct emu_tb tb;
	struct ssq_cqe c[2];
	static char text[1 << 16];
	struct ibv_sge rs;
	int fd = mkstemp(path), ret;
	ssize_t len;

	setenv("SSQ_EMU_TRACE", path, 1);
	ret = emu_tb_init(&tb, &o);
	unsetenv("SSQ_EMU_TRACE");
	CHECK(ret == 0, "traced testbed: %d", ret);
	if (ret) {
		close(fd);
		unlink(path);
		return;
	}
	rs = (struct ibv_sge){ tb.s[1].iova, 256, tb.s[1].key };
	ssq_rq_post_recv(&tb.s[1].rq, &rs, 1);
	ssq_rq_ring(&tb.s[1].rq);
	post_writes(&tb, 1);
	tb.s[0].sq.pi += ssq_prep_send(&tb.s[0].sq, tb.s[0].sq.pi, MLX5_OPCODE_SEND_IMM,
	                               tb.s[0].iova, tb.s[0].key, 32, htobe32(0xfeed), 0);
	tb.s[0].sq.pi += ssq_prep_rdma_write(&tb.s[0].sq, tb.s[0].sq.pi, tb.s[0].iova,
	                                     0xbad00, 8, tb.s[1].iova, tb.s[1].key, 0);
	emu_tb_ring(&tb, 0, tb.s[0].sq.pi - 1);
	emu_tb_poll(&tb, &tb.s[0].scq_v, c, 2);
	emu_tb_fini(&tb); /* closes the trace */
	len = pread(fd, text, sizeof(text) - 1, 0);
	close(fd);
	unlink(path);
	text[len > 0 ? len : 0] = '\0';
	CHECK(len > 0, "trace written");
	CHECK(file_has(text, "execute WQE at pi 0") && file_has(text, "(RDMA_WRITE)"),
	      "decoded WRITE in trace");
	CHECK(file_has(text, "(SEND_IMM)") && file_has(text, "imm=0x0000feed"),
	      "decoded SEND_IMM in trace");
	CHECK(file_has(text, "receive WQE 0"), "receive WQE in trace");
	CHECK(file_has(text, "CQE opcode=0 (REQ)") && file_has(text, "(RESP_SEND_IMM)"),
	      "decoded CQEs in trace");
	CHECK(file_has(text, "LOCAL_PROT_ERR"), "error CQE decoded in trace");
	CHECK(file_has(text, "    "), "hex lines in trace");
	if (test_failures)
		fprintf(stderr, "trace:\n%s\n", text);
}

int main(void)
{
	unsetenv("SSQ_EMU_MODE");
	unsetenv("SSQ_EMU_FAULT");
	unsetenv("SSQ_EMU_TRACE");
	test_sink();
	test_fault_api();
	test_fault_env();
	test_bad_env();
	test_trace();
	return test_exit("emu_modes");
}
