#!/usr/bin/perl
# sk-timeline: /checkpoint's content type (c2sp.org/tlog-tiles: UTF-8);
# bad input (each the right status, the body naming the
# field, nothing stored); keep-alive; a clock set back or run far ahead (fake clock);
# the global rate limit; and the daemon's /proof endpoints for every tree
# size up to a few hundred, checked against an RFC 6962 model in Perl,
# with tampered proofs failing.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use POSIX ();
use Time::HiRes ();
use HTTP::Tiny;
use MIME::Base64 qw(decode_base64);
use SKTest;
use SKTimeline;

plan skip_all => 'sk-timeline not built' unless -x $SKTimeline::TL;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my $now = time();
spew("$d/clock", "$now\n");

mkdir "$d/a";
my $t = start_timeline("$d/a", operator_key => "$d/operator.pub",
    clock_file => "$d/clock", clock_wait_ms => 300, max_clock_ahead => 3600,
    max_body => 8192);
ok($t->{up}, 'sk-timeline listens') or BAIL_OUT(slurp($t->{log}));
my $url = $t->{url};
my $r;

sub expect {
    my ($form, $code, $re, $name) = @_;
    $r = http('POST', "$url/append", $form);
    is($r->{code}, $code, "$name: $code")
        and like($r->{body}, $re, "$name: names the field") or diag($r->{body});
}

my $root = root_entry(cert => "$ca.crt", key => $op);
expect($root, 201, qr/^SN: 0$/m, 'a good entry');

# The checkpoint is a signed note, its signature line led by an em dash:
# text/plain; charset=utf-8, as c2sp.org/tlog-tiles requires.
$r = run_cmd(['curl', '-s', '-o', '-', '-w', '\n%{content_type}',
    "$url/checkpoint"]);
like($r->{out}, qr/^\x{e2}\x{80}\x{94} /m, '/checkpoint: an em dash leads '
    . 'the signature line');
like($r->{out}, qr/\ntext\/plain; charset=utf-8\z/,
    '/checkpoint: text/plain; charset=utf-8') or diag($r->{out});

# Bad input.
expect('x' x 9000, 413, qr/^body: 9002 bytes declared, more than 8192$/m,
    'oversized body');
expect({ e => $root, x => 1 }, 400, qr/^form: unknown field "x"$/m,
    'an unknown form field');
expect({ ref => 'x' }, 400, qr/^form: field "e" missing$/m, 'no e= field');
# A duplicate left empty at the very end, which libmicrohttpd hands over
# only when the form is closed, is a duplicate all the same.
spew("$d/root", $root);
for my $x (['e=', qr/form: field "e" given twice/],
           ['ref=x&e=', qr/form: field "e" given twice/],
           ['e', qr/form: malformed body \(cut short, or a field without "="\)/])
{
    $r = run_cmd(['curl', '-s', '-o', '-', '-w', '\n%{http_code}',
        '--data-urlencode', "e\@$d/root", '--data-binary', $x->[0],
        "$url/append"]);
    like($r->{out}, qr/\A$x->[1]\n\n400\z/, "e=<entry>&$x->[0]: 400")
        or diag($r->{out});
}
# Closing the form early changes nothing for a whole one, multipart too:
# the replayed root reaches the append and is refused there.
$r = run_cmd(['curl', '-s', '-o', '-', '-w', '\n%{http_code}',
    '-F', "e=<$d/root", "$url/append"]);
like($r->{out}, qr/\Aadd-root-ca: CA-Serial 1 is not above 1.*\n403\z/s,
    'multipart/form-data: read whole (403: a replay)') or diag($r->{out});
$r = run_cmd(['curl', '-s', '-o', '-', '-w', '\n%{http_code}', '-H',
    'Content-Type: text/plain', '--data-binary', $root, "$url/append"]);
like($r->{out}, qr/^form: want application\/x-www-form-urlencoded/m,
    'not a form: says what it wants');
like($r->{out}, qr/\n400\z/, '... 400');
$r = run_cmd(['curl', '-s', '-o', '-', '-w', '\n%{http_code}',
    '--data-binary', 'e=Bind%3A%201%0A%00%0A', "$url/append"]);
like($r->{out}, qr/\Aentry: contains a NUL byte\n\n400\z/, 'a NUL byte: 400');
expect("Bind: 1\nName: ex\xc3\xa4mple.com\n\n", 400,
    qr/^entry: byte 17 is not printable ascii$/m, 'non-ASCII');
expect("Bind: 1\nName: x\tx\n\n", 400, qr/^entry: byte 16 is not printable/m,
    'a control character');
(my $swapped = $root) =~ s/^(CA-Cert: .*\n)(CA-Serial: .*\n)/$2$1/m;
expect($swapped, 400, qr/^entry: .*CA-Serial/m, 'fields out of order');
(my $unknown = $root) =~ s/^(CA-Serial: .*\n)/$1Colour: blue\n/m;
expect($unknown, 400, qr/^entry: .*Colour/m, 'an unknown field');
(my $missing = $root) =~ s/^CA-Serial: .*\n//m;
expect($missing, 400, qr/^entry: .*CA-Serial/m, 'a missing field');
(my $badint = $root) =~ s/^CA-Serial: .*$/CA-Serial: 007/m;
expect($badint, 400, qr/^entry: .*CA-Serial/m, 'a leading zero');
expect("Frobnicate: 1\n\n", 400, qr/^entry: /m, 'an unknown entry type');
expect("Add-Root-CA: 2\n\n", 400, qr/^entry: /m, 'an unknown version');
expect("Map-Root: 1\nMap-Hash: " . ('A' x 43) . "\nMap-Names: 0\nSN: N/A\n"
    . "Signature: N/A\nTID: N/A\nTimestamp: N/A\n\n", 403,
    qr/^map-root: only the timeline makes Map-Root entries$/m,
    'a Map-Root from outside');
like(http('GET', "$url/status")->{body}, qr/^Tree-Size: 2$/m,
    'none of it stored (the root and its batch\'s Map-Root entry)');

# The clock.
spew("$d/clock", ($now - 30) . "\n");
expect(root_entry(cert => "$ca.crt", key => $op, serial => 2), 503,
    qr/^clock: \d+ is behind the newest entry's $now$/m, 'clock set back');
spew("$d/clock", ($now + 7200) . "\n");
expect(root_entry(cert => "$ca.crt", key => $op, serial => 3), 503,
    qr/^clock: \d+ is more than 3600 s past the newest entry$/m,
    'clock far in the future');
spew("$d/clock", ($now + 10) . "\n");
expect(root_entry(cert => "$ca.crt", key => $op, serial => 4), 201,
    qr/^Timestamp: @{[$now + 10]}$/m, 'clock back in bounds');
my @ts = map { /^Timestamp: (\d+)$/m } parse_entries(read_log("$d/a"));
is_deeply(\@ts, [$now, $now, $now + 10, $now + 10],
    'no stamp went back, none jumped ahead (each Map-Root at its batch\'s)');

# Keep-alive: GETs and a POST on one connection, each answered (a handler
# that answered only a first request left the second hanging).
$r = run_cmd(['curl', '-sS', '-m', '10', '-w', '%{http_code} %{num_connects}\n',
    '-o', '/dev/null', "$url/status",
    '--next', '-s', '-m', '10', '-w', '%{http_code} %{num_connects}\n',
    '-o', '/dev/null', '--data', 'e=Bind', "$url/append",
    '--next', '-s', '-m', '10', '-w', '%{http_code} %{num_connects}\n',
    '-o', '/dev/null', "$url/checkpoint"]);
is($r->{out}, "200 1\n400 0\n200 0\n",
    'keep-alive: three requests on one connection, each answered')
    or diag($r->{out}, $r->{err});
stop_daemon($t->{pid});

# The global rate limit: 3 new entries a second, a second's worth saved
# up; an append waits up to 1 s for its place, then 503 (issue 40: before
# it is checked).  Twelve at once: the first three, about three more as
# places come, the rest 503.
mkdir "$d/b";
my $s = start_timeline("$d/b", operator_key => "$d/operator.pub",
    rate_global => 3, rate_per_client => 0);
ok($s->{up}, 'a rate-limited timeline');
my $rk = ed25519_key($d, 'rated');
my @at = map { bind_entry(name => "r$_.example", key => $rk,
    chain => [issue($d, $ca, $rk, "r$_.example", "$d/r$_")]) } 1 .. 12;
is(append($s, root_entry(cert => "$ca.crt", key => $op))->{code}, 201,
    'its root');
my @kids;
my $t0 = Time::HiRes::time();
for my $i (0 .. $#at) {
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        my $r = append($s, $at[$i]);
        spew("$d/b/r$i", "$r->{code}\n$r->{body}");
        POSIX::_exit(0);
    }
    push @kids, $pid;
}
waitpid($_, 0) for @kids;
my $span = Time::HiRes::time() - $t0;
my @r = map { slurp("$d/b/r$_") } 0 .. $#at;
my $took = grep { /^201\n/ } @r;
my $most = 3 + 3 * $span + 1;
ok($took >= 2 && $took <= $most, sprintf('twelve at once: %d taken in %.1f '
    . 's (a second\'s worth, and 3 a second)', $took, $span));
ok((grep { /^503\nrate limit: more than 3 new entries per second$/m } @r)
    == @r - $took, '... the others 503, saying why');
ok($most >= 12 || $took < 12, '... some of them');
stop_daemon($s->{pid});

# Proofs for every size up to N, from the daemon, against the model: N / 2
# appends, each a batch ended by its Map-Root entry.
my $N = 260;
mkdir "$d/c";
my $p = start_timeline("$d/c", operator_key => "$d/operator.pub",
    rate_per_client => 0);       # N / 2 appends at once from one client
ok($p->{up}, 'a timeline for the proofs');
my $ua = HTTP::Tiny->new(keep_alive => 1);
my %f = ('CA-Cert' => der_b64("$ca.crt"), map { $_ => 'N/A' }
    qw(SN TID Timestamp Signature));
my @cmd = ('curl');
for my $i (0 .. $N / 2 - 1) {
    $f{'CA-Serial'} = $i;
    sign_entry('Add-Root-CA', \%f, 'Operator-Signature', $op);
    spew("$d/e$i", canon('Add-Root-CA', \%f));
    push @cmd, ($i ? '--next' : ()), '-s', '-o', '/dev/null', '-w',
        '%{http_code}\n', '--data-urlencode', "e\@$d/e$i", "$p->{url}/append";
}
# One curl for all: the appends share a connection.
my $ok = run_cmd(\@cmd)->{out} eq "201\n" x ($N / 2);
ok($ok, $N / 2 . ' entries stored');
my @leaves = map { leaf_hash($_) } parse_entries(read_log("$d/c"));
is(scalar @leaves, $N, "$N entries on disk");
my @root = (undef, map { mth(@leaves[0 .. $_ - 1]) } 1 .. $N);

sub proof {
    my ($q) = @_;
    my $x = $ua->get("$p->{url}/proof/$q");
    die "proof $q: $x->{status} $x->{content}" unless $x->{status} == 200;
    return [map { decode_base64($_) } split /\n/, $x->{content}];
}
srand(6962);
my ($inc, $con, $tampered, $checked) = (1, 1, 1, 0);
for my $n (1 .. $N) {
    for my $i (0, $n - 1, int(rand($n))) {
        my $pr = proof("inclusion?sn=$i&size=$n");
        $inc &&= verify_inclusion($leaves[$i], $i, $n, $pr, $root[$n]);
        if (@$pr) {
            my @bad = @$pr;
            substr($bad[-1], 0, 1) ^= "\x01";
            $tampered &&= !verify_inclusion($leaves[$i], $i, $n, \@bad,
                $root[$n]);
        }
        $checked++;
    }
    for my $m (1, $n - 1 || 1, 1 + int(rand($n))) {
        my $pr = proof("consistency?from=$m&to=$n");
        $con &&= verify_consistency($m, $n, $root[$m], $root[$n], $pr);
        if (@$pr) {
            my @bad = @$pr;
            substr($bad[0], 5, 1) ^= "\x80";
            $tampered &&= !verify_consistency($m, $n, $root[$m], $root[$n],
                \@bad);
        }
        $checked++;
    }
}
ok($inc, "inclusion proofs verify for every size 1..$N");
ok($con, "consistency proofs verify for every size 1..$N");
ok($tampered, 'every tampered proof fails');
cmp_ok($checked, '>=', 6 * $N, "$checked proofs checked");
my $cp = $ua->get("$p->{url}/checkpoint")->{content};
my (undef, $size, $b64) = split /\n/, $cp;
is($size, $N, 'checkpoint size');
is(decode_base64($b64), $root[$N], 'checkpoint root = the model root');
is($ua->get("$p->{url}/proof/consistency?from=0&to=5")->{status}, 400,
    'consistency from 0: 400');
is($ua->get("$p->{url}/proof/inclusion?sn=x")->{status}, 400,
    'a proof with a bad number: 400');
stop_daemon($p->{pid});

unlike(slurp($_->{log}), qr/Sanitizer|runtime error/, 'no sanitizer reports')
    for $t, $s, $p;

done_testing();
