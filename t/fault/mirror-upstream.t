#!/usr/bin/perl
# A mirror whose upstream timeline disappears mid-sync: the timeline is
# killed (-9) while the mirror is fetching one of its entry bundles
# (/tile/entries/, or a chunk from a timeline without tiles) over a slow
# link.  The mirror keeps the copy it had checked (entries, checkpoint),
# marks the timeline Stuck with the failed request as the reason, retries
# with its backoff, serves nothing of the cut chunk (while Stuck, only its
# last checked state, with the checkpoint's age), and catches up once the
# timeline is back.
# Then the link goes silent mid-chunk (SIGSTOP): SIGTERM still stops the
# mirror within 2 s, not after fetch_timeout_ms.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Time::HiRes qw(time sleep);
use SKTest;
use SKTimeline;
use SKMirror;
use SKLoad;

plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my %sk = map { $_ => ed25519_key($d, $_) } qw(a b);
my %crt = map { $_ => issue($d, $ca, $sk{$_}, "$_.example", "$d/$_") } qw(a b);

my (%t, @tl);
for my $tid (1, 2, 3) {
    mkdir "$d/tl$tid";
    $t{$tid} = start_timeline("$d/tl$tid", tid => $tid,
        operator_key => "$d/operator.pub", chunk_interval => 2,
        rate_per_client => 0);      # 301 appends in one burst
    ok($t{$tid}{up}, "timeline $tid listens") or BAIL_OUT(slurp($t{$tid}{log}));
    append($t{$tid}, root_entry(cert => "$ca.crt", key => $op));
}
is(append($t{1}, bind_entry(name => 'a.example', key => $sk{a},
    chain => [$crt{a}]))->{code}, 201, 'timeline 1: a.example bound');

# Timeline 1 behind a link of 32 kB/s; the others direct.  (Entry bundles
# are not compressed: the 256 Add-Root-CAs below are some 300 kB, which
# must pass within fetch_timeout_ms once the timeline is back.)
my $link = slow_link($t{1}{port}, 32000);
@tl = ([1, $link->{url}, "$d/tl1/timeline.pub"],
    map { [$_, $t{$_}{url}, "$d/tl$_/timeline.pub"] } 2, 3);
my %keys = map { $_->[0] => [$_->[2], "sk-timeline-$_->[0]"] } @tl;
# tail_max 0: no entries one by one from /entry/ (the chunk path), so the
# cut is in a bundle or a chunk.
my $m = start_mirror("$d/m", \@tl, tail_max => 0, fetch_timeout_ms => 20000);
ok($m->{up}, 'sk-mirror listens') or BAIL_OUT(slurp($m->{log}));
ok(wait_until(sub { 3 == grep { tl_state($m, $_) eq 'Idle' } 1, 2, 3 }, 30),
    'three timelines Idle');

sub tl1 {
    my $s = mirror_status($m) or return {};
    return (grep { $_->{tid} == 1 } @{$s->{timelines}})[0];
}

# What timeline 1 holds: its checkpoint's size (its entries, and the
# Map-Root entry that ends each batch).
sub size1 {
    return (split /\n/, http('GET', "$t{1}{url}/checkpoint")->{body})[1]
        // -1;
}
my $size1 = size1();
is(tl1()->{entries}, $size1, "timeline 1: its $size1 entries mirrored");

# 300 more entries (Add-Root-CA: distinct signatures, so the chunk stays
# some tens of kB once compressed), then b.example, in one burst.
my %f = ('CA-Cert' => der_b64("$ca.crt"), map { $_ => 'N/A' }
    qw(SN TID Timestamp Signature));
my @cmd = ('curl');
for my $i (2 .. 301) {
    $f{'CA-Serial'} = $i;
    sign_entry('Add-Root-CA', \%f, 'Operator-Signature', $op);
    spew("$d/e$i", canon('Add-Root-CA', \%f));
    push @cmd, ($i > 2 ? '--next' : ()), '-s', '-o', '/dev/null', '-w',
        '%{http_code}\n', '--data-urlencode', "e\@$d/e$i", "$t{1}{url}/append";
}
spew("$d/eb", bind_entry(name => 'b.example', key => $sk{b},
    chain => [$crt{b}]));
push @cmd, '--next', '-s', '-o', '/dev/null', '-w', '%{http_code}\n',
    '--data-urlencode', "e\@$d/eb", "$t{1}{url}/append";
is(run_cmd(\@cmd)->{out}, "201\n" x 301, '301 more entries on timeline 1');

# Kill it once the mirror is well into a chunk.
# The mirror may have two in flight (a partial tile, then the full one):
# whichever the kill cuts is the one its reason must name.
my ($chunk, @chunks);
ok(wait_until(sub {
    my $s = link_sent($link);
    @chunks = sort grep { m{\.bz2$|/tile/entries/} && $s->{$_} > 8000 }
        keys %$s;
    $chunk = $chunks[0];
    return $chunk }, 30), 'the mirror is fetching a bundle (or chunk)')
    or diag(explain(link_sent($link)));
kill 'KILL', $t{1}{pid};
stop_daemon($t{1}{pid});
diag("cut $chunk after " . link_sent($link)->{$chunk} . ' bytes');

ok(wait_state($m, 1, 'Stuck', 10), 'the timeline is Stuck');
my $s = tl1();
my $paths = join '|', map { /^GET (\S+)/ ? quotemeta($1) : () } @chunks;
# The reason the timeline went Stuck with, from the log's transition line:
# /status may already show a later round's (each retry names /checkpoint).
my ($why) = slurp($m->{log}) =~ /timeline 1: (?:Idle|Syncing) -> Stuck: (.*)/;
like($why // '', qr/^GET \Q$link->{url}\E(?:$paths): /,
    "the reason names the cut request: " . ($why // 'none logged'));
# Under load the mirror may have checked a smaller bundle of the burst
# before the one that was cut: it keeps whatever it had checked, under
# that checkpoint, and nothing of the cut bundle (b.example, the last).
my $held = $s->{entries} // -1;
ok($held >= $size1, "the copy keeps the checked entries ($held)");
is($s->{checkpoint_size}, $held, '... and their checkpoint');
like(slurp($m->{log}), qr/timeline 1: (Idle|Syncing) -> Stuck: GET /,
    'the log says so');
ok(wait_until(sub { (tl1()->{failures} // 0) >= 3 }, 15),
    'retried with its backoff (three failed rounds)')
    or diag(explain(tl1()));
like(tl1()->{reason}, qr/^GET \Q$link->{url}\E\/checkpoint: /,
    '... each failure named');

for my $name (qw(a.example b.example)) {
    my $r = query($m, $name);
    my $a = check_answer($r->{body}, $m->{pub}, \%keys, $name);
    ok($a->{ok}, "$name: answered by the two healthy timelines")
        or diag($a->{err});
    is($a->{timelines}{1}{state}, 'Stuck', "$name: timeline 1 listed Stuck");
    # Served from the last checked state (its checkpoint, its age said):
    # a.example's Bind, nothing of the cut chunk.
    is($a->{timelines}{1}{size}, $held,
        "$name: with the last checked checkpoint");
    ok(defined $a->{timelines}{1}{age}, "$name: ... and its age");
    is(scalar @{$a->{timelines}{1}{entries} // []}, $name eq 'a.example' ? 1 : 0,
        "$name: " . ($name eq 'a.example' ? 'its checked entry'
                                          : 'nothing of the cut chunk'));
}

# Back.
restart_timeline($t{1});
ok($t{1}{up}, 'timeline 1 back');
ok(wait_state($m, 1, 'Idle', 60), 'the mirror resumes: Idle');
my $full = size1();
ok(wait_until(sub { tl1()->{entries} == $full }, 30),
    "... with every entry ($full)");
ok($held < $full, '... of which the cut bundle was not kept');
my $a = check_answer(query($m, 'b.example')->{body}, $m->{pub}, \%keys);
is(scalar @{$a->{timelines}{1}{entries} // []}, 1,
    'b.example served from timeline 1');

# A link gone silent mid-chunk: the mirror must still stop at once.
for my $i (302 .. 401) {
    $f{'CA-Serial'} = $i;
    sign_entry('Add-Root-CA', \%f, 'Operator-Signature', $op);
    append($t{1}, canon('Add-Root-CA', \%f));
}
my $before = link_sent($link);
ok(wait_until(sub {
    my $s = link_sent($link);
    return grep { m{\.bz2$|/tile/entries/} && $s->{$_} > 2000
        && $s->{$_} != ($before->{$_} // -1) } keys %$s }, 30),
    'the mirror is fetching the next bundle (or chunk)');
kill 'STOP', $link->{pid};
my $t0 = time;
kill 'TERM', $m->{pid};
my $gone = wait_until(sub { !daemon_alive($m->{pid}) }, 30);
my $secs = time - $t0;
ok($gone && $secs < 2, 'SIGTERM mid-fetch on a silent link: gone within 2 s')
    or diag(sprintf '%.1f s', $secs);
kill 'CONT', $link->{pid};
kill 'TERM', $link->{pid};
waitpid($link->{pid}, 0);

stop_daemon($m->{pid});
stop_daemon($t{$_}{pid}) for 1, 2, 3;
unlike(slurp($m->{log}), qr/Sanitizer|runtime error/, 'no sanitizer reports');
done_testing();
