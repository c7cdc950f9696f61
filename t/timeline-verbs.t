#!/usr/bin/perl
# sk revoke / sk rebind / sk services against a running sk-timeline, and
# 202 Accepted: an append that cannot be stamped at once (the clock is
# behind the newest stamp, or the sync it waits for is slow) gets a token,
# GET /status/<token> tells pending / the stamped entry / the reason, and
# the sk verbs poll it.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use POSIX ();
use Digest::SHA qw(sha256);
use Time::HiRes qw(sleep);
use SKTest;
use SKTimeline;

plan skip_all => 'sk-timeline not built' unless -x $SKTimeline::TL;
plan skip_all => 'sk not built' unless -x $SKTest::SK;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my %sk = map { $_ => ed25519_key($d, $_) } qw(example heir other new);
issue($d, $ca, $sk{example}, 'example.com', "$d/example");
issue($d, $ca, $sk{heir}, 'heir.com', "$d/heir");
issue($d, $ca, $sk{new}, 'example.com', "$d/new");
spew("$d/clock", time() . "\n");

mkdir "$d/a";
my $t = start_timeline("$d/a", operator_key => "$d/operator.pub",
    clock_file => "$d/clock", clock_wait_ms => 1500, reply_ms => 200,
    sk_budget => 4);
ok($t->{up}, 'sk-timeline listens') or BAIL_OUT(slurp($t->{log}));
my $url = $t->{url};
is(append($t, root_entry(cert => "$ca.crt", key => $op))->{code}, 201,
    'the test CA is trusted');

my $r;
for my $n (qw(example heir)) {
    $r = sk('entry', 'bind', '-k', $sk{$n}, '-n', "$n.com", '-s', 'https',
        '-c', "$d/$n.crt", '-r', $n eq 'example' ? 'heir.com' : 'none',
        '-o', "$d/$n.e");
    $r = sk('register', '-i', "$d/$n.e", '-t', $url);
    is($r->{rc}, 0, "$n.com bound") or diag($r->{out}, $r->{err});
}

# sk services
$r = sk('services', '-k', $sk{example}, '-n', 'example.com', '-s',
    'https,smtps', '-t', $url);
is($r->{rc}, 0, 'sk services: exit 0') or diag($r->{err});
# Each append is a batch ended by its Map-Root entry: entries at even SNs.
is($r->{out}, "$url: 201 accepted, SN 6\n", 'sk services: outcome line');
$r = sk('services', '-k', $sk{example}, '-n', 'example.com', '-s',
    'https,smtps', '-t', $url);
like($r->{out}, qr/: 403 rejected: change-services: example.com: this entry \(its SK-Signature\) was taken before: a replay$/,
    'the same services signed again (Ed25519 is deterministic): a replay');
$r = sk('services', '-k', $sk{example}, '-n', 'example.com', '-s',
    'smtps,https', '-t', $url);
is($r->{rc}, 0, 'the same services written another way: accepted (SN 8)')
    or diag($r->{out});
my $e = http('GET', "$url/entry/6")->{body};
(my $again = $e) =~ s/^(SN|TID|Timestamp|Signature): .*$/$1: N\/A/mg;
$r = append($t, $again);
is($r->{code}, 403, 'an old Change-Services replayed: 403');
like($r->{body}, qr/^change-services: example.com: this entry \(its SK-Signature\) was taken before: a replay$/m,
    '... named a replay');
like($e, qr/\AChange-Services: 1\n/, 'a Change-Services was stored');
like($e, qr/^Services: https,smtps$/m, 'with the new services');
spew("$d/cs3.e", $e);
$r = sk('entry', 'verify', '-i', "$d/cs3.e", '-p', "$d/example.pub",
    '--timeline-pub', "$d/a/timeline.pub");
is($r->{rc}, 0, 'its SK-Signature and timeline Signature verify')
    or diag($r->{err});
$r = sk('services', '-k', $sk{other}, '-n', 'example.com', '-s', 'imaps',
    '-t', $url, '--json');
is($r->{rc}, 1, 'sk services by another key: exit 1');
my $j = eval { decode_json($r->{out}) } // {};
is($j->{type}, 'Change-Services', 'json: type');
like($j->{timelines}[0]{reason} // '', qr/^change-services: SK-Signature/,
    'json: the rule');

# sk rebind needs an Unbind first.
my @rebind = ('rebind', '-k', $sk{new}, '-n', 'example.com', '-s', 'https',
    '-c', "$d/new.crt", '--rebinder', 'heir.com', '-t', $url);
$r = sk(@rebind, '--rebinder-key', $sk{heir});
like($r->{out}, qr/: 403 rejected: rebind: newest entry for example.com is not an Unbind$/,
    'sk rebind before an Unbind: 403') or diag($r->{out}, $r->{err});

# sk revoke
$r = sk('revoke', '-k', $sk{example}, '-n', 'example.com', '-l', '12345',
    '-t', $url);
is($r->{rc}, 0, 'sk revoke: exit 0') or diag($r->{err});
like($r->{out}, qr/^\Q$url\E: 201 accepted, SN 10$/, 'sk revoke: SN 10');
like(http('GET', "$url/entry/10")->{body},
    qr/\AUnbind: 1\nLast-Secure-Timestamp: 12345\nName: example.com\n/,
    'the Unbind with its Last-Secure-Timestamp');
$r = sk('revoke', '-k', $sk{example}, '-n', 'example.com', '-t', $url);
like($r->{out}, qr/: 403 rejected: unbind: example.com is not bound$/,
    'sk revoke twice: 403');

$r = sk(@rebind, '--rebinder', 'other.com', '--rebinder-key', $sk{other});
like($r->{out}, qr/: 403 rejected: rebind: other.com is not among the rebinders of example.com$/,
    'sk rebind by an unlisted rebinder: 403');
$r = sk(@rebind, '--rebinder-key', $sk{other});
like($r->{out}, qr/: 403 rejected: rebind: Rebinder-Signature/,
    'sk rebind signed by the wrong key: 403');
$r = sk(@rebind, '--rebinder-key', $sk{heir});
is($r->{rc}, 0, 'sk rebind by the listed rebinder: exit 0')
    or diag($r->{out}, $r->{err});
$e = http('GET', "$url/entry/12")->{body};
like($e, qr/\ARebind: 1\n/, 'a Rebind was stored');
like($e, qr/^Rebinder-Name: heir.com$/m, 'naming the rebinder');
$r = sk('services', '-k', $sk{new}, '-n', 'example.com', '-s', 'imaps',
    '-t', $url);
is($r->{rc}, 0, 'the new SK is in force') or diag($r->{out});

# Usage errors.
$r = sk('revoke', '-k', $sk{example}, '-n', 'example.com');
is($r->{rc}, 2, 'no -t: usage');
$r = sk('revoke', '-k', $sk{example}, '-n', 'example.com', '-c', 'x',
    '-t', $url);
is($r->{rc}, 2, 'a flag revoke does not take: usage');
$r = sk('services', '-k', $sk{example}, '-n', 'example.com', '-t', $url);
is($r->{rc}, 2, 'services without -s: usage');
like($r->{err}, qr/missing -s SERVICES/, '... naming the flag');
$r = sk('rebind', '-k', $sk{new}, '-n', 'example.com', '-s', 'https',
    '-c', "$d/new.crt", '--rebinder', 'heir.com', '-t', $url);
like($r->{err}, qr/missing --rebinder-key KEY/, 'rebind without its key');
for my $v (qw(revoke rebind services)) {
    $r = sk('help', $v);
    like($r->{out}, qr/^usage:\n  sk $v -k KEY -n NAME/, "sk help $v");
}

# 202: the clock is set back.  The POST answers after reply_ms with a
# token; the append goes on, and stamps once the clock catches up.
my @e = parse_entries(read_log("$d/a"));
my ($last) = $e[-1] =~ /^Timestamp: (\d+)$/m;
spew("$d/clock", ($last - 50) . "\n");
my $cs = cs_entry(name => 'heir.com', services => 'https:1', key => $sk{heir});
$r = append($t, $cs);
is($r->{code}, 202, 'clock behind: 202 Accepted') or diag($r->{body});
my ($tok) = $r->{body} =~ /^Token: ([0-9a-f]{32})$/m;
ok($tok, '... with a token');
$r = http('GET', "$url/status/$tok");
is($r->{code}, 200, '/status/<token>: 200');
is($r->{body}, "202 Accepted\n", '... still pending');
is(http('GET', "$url/status")->{body} =~ /^Tree-Size: (\d+)$/m && $1,
    scalar @e, 'nothing stamped while the clock is behind');
spew("$d/clock", ($last + 7) . "\n");
$r = wait_until(sub {
    my $s = http('GET', "$url/status/$tok");
    return $s->{body} =~ /\A202 / ? undef : $s;
}, 5);
like($r->{body}, qr/\A201 Created\nChange-Services: 1\n/,
    'once the clock caught up: 201 and the stamped entry');
like($r->{body}, qr/^Timestamp: @{[$last + 7]}$/m, '... stamped at the new time');
like($r->{body}, qr/^SN: @{[scalar @e]}$/m, '... with the next SN');

# The clock stays behind past clock_wait_ms: the outcome is the 503.
spew("$d/clock", ($last - 50) . "\n");
$r = append($t, cs_entry(name => 'heir.com', services => 'https:2',
    key => $sk{heir}));
($tok) = $r->{body} =~ /^Token: ([0-9a-f]{32})$/m;
is($r->{code}, 202, 'clock behind again: 202');
sleep 1.8;
like(http('GET', "$url/status/$tok")->{body},
    qr/\A503 Service Unavailable\nclock: \d+ is behind the newest entry's \d+\n\z/,
    'clock still behind after clock_wait_ms: the outcome is 503');

# The name's state is looked up before anything waits or is checked (a
# replay costs a lookup, issue 40): an update for an unbound name is a 403
# at once, clock behind or not.
$r = append($t, cs_entry(name => 'nobody.com', services => 'https',
    key => $sk{other}));
is($r->{code}, 403, 'an update for an unbound name, clock behind: 403 at once');
like($r->{body}, qr/\Achange-services: nobody.com is not bound\n\z/,
    '... naming the rule');
spew("$d/clock", ($last + 8) . "\n");
is(http('GET', "$url/status/" . ('0' x 32))->{code}, 410,
    'a token never issued: 410');

# sk gives up polling at --timeout: the entry is still queued.
spew("$d/clock", ($last - 50) . "\n");
$r = sk('services', '-k', $sk{heir}, '-n', 'heir.com', '-s', 'https:9',
    '-t', $url, '--timeout', '1');
is($r->{rc}, 1, 'still queued at --timeout: exit 1');
like($r->{out}, qr/^\Q$url\E: 202 still queued at the timeout: token [0-9a-f]{32}$/,
    '... saying so, with the token') or diag($r->{out});
sleep 1;        # its job ends (503: the clock stayed behind)

# sk polls: the clock is behind when it posts, and catches up a second
# later.
spew("$d/clock", ($last - 50) . "\n");
my $pid = fork;
if ($pid == 0) {
    sleep 1;
    spew("$d/clock", ($last + 9) . "\n");
    POSIX::_exit(0);
}
$r = sk('services', '-k', $sk{heir}, '-n', 'heir.com', '-s', 'https:3',
    '-t', $url, '--json');
waitpid($pid, 0);
is($r->{rc}, 0, 'sk services through a 202: exit 0') or diag($r->{out});
$j = eval { decode_json($r->{out}) } // {};
ok($j->{timelines}[0]{accepted}, 'json: accepted after polling');
like($j->{timelines}[0]{token} // '', qr/^[0-9a-f]{32}$/, 'json: the token');
is($j->{timelines}[0]{status}, 201, 'json: status 201');

# The budget of 4 updates per SK (https:1, https:3; the 503 and the 403
# did not count): two more, then 503.
$r = sk('services', '-k', $sk{heir}, '-n', 'heir.com', '-s', 'https:33',
    '-t', $url);
is($r->{rc}, 0, 'an update within the budget') or diag($r->{out});
$r = sk('services', '-k', $sk{heir}, '-n', 'heir.com', '-s', 'https:4',
    '-t', $url);
is($r->{rc}, 0, 'third update within the budget');
$r = sk('services', '-k', $sk{heir}, '-n', 'heir.com', '-s', 'https:5',
    '-t', $url);
like($r->{out}, qr/: 503 not stored: rate limit: change-services: budget of 4/,
    'budget spent: 503');

# The operator stops trusting the CA: Binds from it fail from then on.
spew("$d/clock", ($last + 20) . "\n");
issue($d, $ca, $sk{other}, 'late.com', "$d/late");
my $late = bind_entry(name => 'late.com', key => $sk{other},
    chain => ["$d/late.crt"]);
my $der = run_cmd(['openssl', 'x509', '-in', "$ca.crt", '-outform', 'DER'])
    ->{out};
my $rm = { 'CA-Cert-Hash' => b64url(sha256($der)), 'CA-Serial' => 2,
    map { $_ => 'N/A' } qw(SN TID Timestamp Signature) };
sign_entry('Remove-Root-CA', $rm, 'Operator-Signature', $op);
$r = append($t, canon('Remove-Root-CA', $rm));
is($r->{code}, 201, 'Remove-Root-CA by the operator') or diag($r->{body});
$r = append($t, $late);
is($r->{code}, 403, 'a Bind from the removed CA: 403');
like($r->{body}, qr/^bind: chain: not valid to a trusted root at claim time/,
    '... naming the chain rule');

# Root-CA entries are refused on replay (docs/protocol.md, "Operator
# entries"): the public Add-Root-CA at SN 0, posted again, must not trust
# the removed root again, nor may the Remove be replayed.
my $add0 = http('GET', "$url/entry/0")->{body};
$r = append($t, $add0);
is($r->{code}, 403, 'the old Add-Root-CA replayed: 403') or diag($r->{body});
like($r->{body}, qr/^add-root-ca: CA-Serial 1 is not above 2, the newest root change's: a replay or out of order$/m,
    '... naming the serial rule');
$r = append($t, $late);
is($r->{code}, 403, 'the removed CA stays untrusted');
$r = append($t, canon('Remove-Root-CA', $rm));
is($r->{code}, 403, 'the Remove-Root-CA replayed: 403');
like($r->{body}, qr/^remove-root-ca: CA-Serial 2 is not above 2/m,
    '... naming the serial rule');
$r = append($t, root_entry(cert => "$ca.crt", key => $op, serial => 3));
is($r->{code}, 201, 'a new Add-Root-CA with a later serial trusts it again')
    or diag($r->{body});
$r = append($t, root_entry(cert => "$ca.crt", key => $op, serial => 4));
is($r->{code}, 201, 'adding a trusted root again: taken, changes nothing');
$rm->{'CA-Serial'} = 5;
sign_entry('Remove-Root-CA', $rm, 'Operator-Signature', $op);
is(append($t, canon('Remove-Root-CA', $rm))->{code}, 201,
    'one Remove-Root-CA (serial 5) ...');
is(append($t, $late)->{code}, 403, '... ends the trust of a root added twice');
stop_daemon($t->{pid});
restart_timeline($t);
ok($t->{up}, 'restarts');
is(append($t, $add0)->{code}, 403, 'after a restart the replay is refused');
is(append($t, $late)->{code}, 403, '... and the root still removed');

# 202 behind a slow sync (sync_delay_ms, a test knob): the first writer
# leads a slow fdatasync, a second one written meanwhile gets a token and
# 201 once its entry is on disk.
mkdir "$d/b";
my $s = start_timeline("$d/b", tid => 9, operator_key => "$d/operator.pub",
    sync_delay_ms => 700, reply_ms => 150);
ok($s->{up}, 'a timeline with slow syncs') or BAIL_OUT(slurp($s->{log}));
$pid = fork;
if ($pid == 0) {
    append($s, root_entry(cert => "$ca.crt", key => $op));
    POSIX::_exit(0);
}
sleep 0.3;
$r = append($s, root_entry(cert => "$d/example.crt", key => $op,
    serial => 2));
waitpid($pid, 0);
is($r->{code}, 202, 'queued behind a sync: 202') or diag($r->{body});
($tok) = $r->{body} =~ /^Token: ([0-9a-f]{32})$/m;
$r = wait_until(sub {
    my $x = http('GET', "$s->{url}/status/$tok");
    return $x->{body} =~ /\A202 / ? undef : $x;
}, 5);
like($r->{body}, qr/\A201 Created\nAdd-Root-CA: 1\n.*^SN: 1$/ms,
    'then 201 with the entry, once durable');
like(http('GET', "$s->{url}/status")->{body}, qr/^Tree-Size: 3$/m,
    'both entries durable, in one batch: one Map-Root entry after them');

# commit_delay_us holds a batch's sync only for appends being checked at
# that moment: one alone is answered at once, however long the delay.
mkdir "$d/c";
my $c = start_timeline("$d/c", tid => 10, operator_key => "$d/operator.pub",
    commit_delay_us => 100000);
ok($c->{up}, 'a timeline with a 0.1 s commit delay')
    or BAIL_OUT(slurp($c->{log}));
# Six appends one after another, the quickest counted: a delay would
# hold each of them, a busy machine only some.
my ($took, @codes);
for my $serial (1 .. 6) {
    my $alone = root_entry(cert => "$ca.crt", key => $op, serial => $serial);
    my $t0 = Time::HiRes::time();
    push @codes, append($c, $alone)->{code};
    my $dt = Time::HiRes::time() - $t0;
    $took = $dt if !defined $took || $dt < $took;
}
is("@codes", join(" ", ("201") x 6), "appends alone: 201");
ok($took < 0.1, "... without waiting for the commit delay ($took s)");
spew("$d/c/bad.conf", slurp("$d/c/tl.conf")
    =~ s/^commit_delay_us = .*$/commit_delay_us = 100001/mr);
my $bad = run_cmd([$SKTimeline::TL, '-n', '-c', "$d/c/bad.conf"]);
ok($bad->{rc} == 78
    && $bad->{err} =~ /"commit_delay_us" must be at most 100000/,
    'sk-timeline -n refuses a commit delay above 0.1 s') or diag($bad->{err});

stop_daemon($_->{pid}) for $t, $s, $c;
unlike(slurp($_->{log}), qr/Sanitizer|runtime error/, 'no sanitizer reports')
    for $t, $s, $c;

done_testing();
