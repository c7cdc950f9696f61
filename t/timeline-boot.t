#!/usr/bin/perl
# sk-timeline commits a batch's index rows without LMDB's own syncs and
# syncs them after, out of its lock (docs/timeline.md, "The name map"), so
# a system crash between the two could leave the index's last commit half
# written.  index/boot names the boot the index was opened in: a clean
# stop removes it, a process killed in the same boot leaves it and the
# next start reads the index as it is; one from another boot (the system
# went down) makes the start rebuild the index from the log.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SKTest;
use SKTimeline;

plan skip_all => 'sk-timeline not built' unless -x $SKTimeline::TL;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');
plan skip_all => 'no boot id' unless -r '/proc/sys/kernel/random/boot_id';

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'ca');
my $sk = ed25519_key($d, 'a');
my $crt = issue($d, $ca, $sk, 'a.example', "$d/a");
my $boot = "$d/tl/index/boot";
my $id = slurp('/proc/sys/kernel/random/boot_id');
my $rebuilt = qr/the system went down while it was open/;

mkdir "$d/tl";
my $t = start_timeline("$d/tl", operator_key => "$d/operator.pub");
ok($t->{up}, 'timeline listens') or BAIL_OUT(slurp($t->{log}));
is(slurp($boot), $id, 'while open, index/boot holds this boot\'s id');
is(append($t, root_entry(cert => "$ca.crt", key => $op))->{code}, 201,
    'a root CA');
is(append($t, bind_entry(name => 'a.example', key => $sk, chain => [$crt]))
    ->{code}, 201, 'a Bind');
is(stop_daemon($t->{pid}), 0, 'a clean stop');
ok(!-e $boot, '... removes index/boot');

restart_timeline($t);
ok($t->{up}, 'restarted');
kill 'KILL', $t->{pid};
waitpid($t->{pid}, 0);
is(slurp($boot), $id, 'killed: index/boot is left, of this boot');
restart_timeline($t);
ok($t->{up}, 'restarted after the kill');
unlike(slurp($t->{log}), $rebuilt, '... the same boot: the index is read');
kill 'KILL', $t->{pid};
waitpid($t->{pid}, 0);

spew($boot, "00000000-0000-4000-8000-000000000000\n");
truncate($t->{log}, 0);
restart_timeline($t);
ok($t->{up}, 'restarted as after a reboot');
like(slurp($t->{log}), $rebuilt, '... another boot\'s index/boot: the index '
    . 'is rebuilt from the log');
is(append($t, bind_entry(name => 'a.example', key => $sk, chain => [$crt]))
    ->{code}, 403, '... and decides as before: a second Bind of the name '
    . 'is refused');
is(slurp($boot), $id, '... index/boot names this boot again');
is(stop_daemon($t->{pid}), 0, 'a clean stop');
done_testing();
