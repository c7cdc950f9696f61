#!/usr/bin/perl
# sk-timeline under kill -9: many clients append while the daemon is
# killed with SIGKILL at random moments and restarted, and a watcher keeps
# reading /checkpoint and /status.  Every entry that got 201 must be on
# disk as acknowledged, SNs contiguous, every restart must succeed (a torn
# tail past signed-head is cut, nothing else), and no two signed heads may
# contradict: each checkpoint and TFM seen matches the root recomputed from
# the log at its size.  Each client also binds names with chains through
# its own intermediate CA, so certs.log gets its new lines during the storm
# and the log on disk holds references to them.  --check passes at the end.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use MIME::Base64 qw(decode_base64);
use POSIX qw(_exit);
use Time::HiRes qw(sleep);
use SKTest;
use SKTimeline;

plan skip_all => 'sk-timeline not built' unless -x $SKTimeline::TL;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my ($CLIENTS, $PER_CLIENT, $KILLS) = (8, 20, 5);

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'ca');
my $sk = ed25519_key($d, 'sk');
my $crt = issue($d, $ca, $sk, 'example.com', "$d/example");

# Its clients all post from one address: no per-client rate limit.
my $t = start_timeline($d, operator_key => "$d/operator.pub",
    sk_budget => 1000000, rate_per_client => 0);
ok($t->{up}, 'sk-timeline listens') or BAIL_OUT(slurp($t->{log}));
is(append($t, root_entry(cert => "$ca.crt", key => $op))->{code}, 201,
    'root added');
is(append($t, bind_entry(name => 'example.com', key => $sk,
    chain => [$crt]))->{code}, 201, 'name bound');

# Entries made before the storm, so clients only POST: [tag, entry], the
# tag (a Services or Name value) found in the stored entry.
my @work = map {
    my $c = $_;
    my $inter = make_intermediate($d, $ca, "inter$c");
    my @cs = map { my $s = 'https:' . (1000 + $c * 100 + $_);
        [$s, cs_entry(name => 'example.com', services => $s, key => $sk)] }
        1 .. $PER_CLIENT;
    for my $i (0 .. 2) {
        my $name = "n$i.c$c.example";
        my $nk = ed25519_key($d, "n$i.c$c");
        my $nc = issue($d, $inter, $nk, $name, "$d/$name");
        splice @cs, $i * 10, 0, [$name, bind_entry(name => $name, key => $nk,
            chain => [$nc, "$inter.crt"])];
    }
    \@cs
} 0 .. $CLIENTS - 1;

my @kids;
for my $c (0 .. $CLIENTS - 1) {
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open my $out, '>', "$d/acked.$c" or _exit(1);
        for my $w (@{$work[$c]}) {
            my ($tag, $e) = @$w;
            for my $try (1 .. 50) {
                my $r = append($t, $e);
                if ($r->{code} == 201) {
                    my ($sn) = $r->{body} =~ /^SN: (\d+)$/m;
                    print $out "$sn $tag\n";
                    spew("$d/ack.$sn", $r->{body});
                    last;
                }
                # Stored before a kill cut the 201 off: a retry is a replay.
                if ($r->{code} == 403
                    && $r->{body} =~ /: a replay$|already has a Bind/m)
                {
                    print $out "replayed $tag\n";
                    last;
                }
                sleep 0.05;     # daemon down: retry
            }
        }
        close $out;
        _exit(0);
    }
    push @kids, $pid;
}

# The watcher: every signed head it is shown, one file each.
my $watcher = fork // die "fork: $!";
if ($watcher == 0) {
    for (my $i = 0; !-e "$d/stop"; $i++) {
        for my $what (qw(checkpoint status)) {
            my $r = http('GET', "$t->{url}/$what");
            spew("$d/$what.$i", $r->{body}) if $r->{code} == 200;
        }
        sleep 0.05;
    }
    _exit(0);
}

for my $k (1 .. $KILLS) {
    sleep 0.3 + rand(0.7);
    kill 'KILL', $t->{pid};
    stop_daemon($t->{pid});
    restart_timeline($t);
    ok($t->{up}, "restart $k after SIGKILL") or diag(slurp($t->{log}));
}
waitpid($_, 0) for @kids;
spew("$d/stop", '');
waitpid($watcher, 0);
my $r = http('GET', "$t->{url}/checkpoint");
my @checkpoints = ($r->{body});
stop_daemon($t->{pid});
unlike(slurp($t->{log}), qr/refus|Sanitizer|runtime error/,
    'no refusal, no sanitizer report');

my @entries = parse_entries(read_log("$d"));
my @leaves = map { leaf_hash($_) } @entries;
my $contiguous = 1;
for my $i (0 .. $#entries) {
    $contiguous &&= $entries[$i] =~ /^SN: $i$/m;
}
ok($contiguous, scalar(@entries) . ' entries, SNs contiguous from 0');

my (%acked, %stored);
for my $c (0 .. $CLIENTS - 1) {
    $acked{$_} = $c for split /\n/, slurp("$d/acked.$c");
}
$stored{$_}++ for map { /^Services: (https:1\d\d\d)$/m ? $1
    : /^Name: (n\d\.c\d\.example)$/m ? $1 : () } @entries;
my $present = 1;
for my $a (keys %acked) {
    my ($sn, $tag) = split / /, $a;
    $present &&= $sn eq 'replayed' ? $stored{$tag}
        : defined $entries[$sn] && $entries[$sn] =~ /^(Services|Name): \Q$tag\E$/m;
}
ok($present, scalar(keys %acked) . ' acknowledged entries all on disk');
is(scalar(() = slurp("$d/entries.log") =~ /,@/g), 3 * $CLIENTS,
    'each Bind refers to its intermediate in certs.log');
is(scalar(() = slurp("$d/certs.log") =~ /\n/g), $CLIENTS,
    '... which holds each intermediate once');
cmp_ok(scalar(keys %acked), '==', $CLIENTS * ($PER_CLIENT + 3),
    'every client entry was eventually acknowledged (201, or refused as a '
    . 'replay of itself)');
ok(!grep({ $_ > 1 } values %stored), 'none stored twice');

opendir my $dh, $d or die;
my @seen = grep { /^(checkpoint|status|ack)\.\d+$/ } readdir $dh;
my ($roots_ok, $heads, $acks) = (1, 0, 0);
for my $f (@seen) {
    my $body = slurp("$d/$f");
    my ($size, $root);
    if ($f =~ /^checkpoint/) {
        (undef, $size, $root) = split /\n/, $body;
        $root = decode_base64($root);
    } elsif ($f =~ /^status/) {
        ($size) = $body =~ /^Tree-Size: (\d+)$/m;
        ($root) = $body =~ /^Root-Hash: (\S+)$/m;
        $root = decode_base64(($root =~ tr{-_}{+/}r) . '=');
    } else {
        # A stamped entry shown in a 201 is signed too: the log's, byte
        # for byte, at its SN.
        my ($sn) = $f =~ /(\d+)$/;
        $roots_ok &&= defined $entries[$sn] && $entries[$sn] eq $body;
        $acks++;
        next;
    }
    $heads++;
    $roots_ok &&= $size <= @leaves
        && $root eq mth(@leaves[0 .. $size - 1]);
    diag("$f contradicts the log") if !$roots_ok;
}
ok($roots_ok && $heads > 0, "$heads signed heads and $acks 201s seen during "
    . 'the storm: all match the log on disk, none contradicts another');
my ($last_size) = (split /\n/, $checkpoints[-1])[1];
is($last_size, scalar @entries, 'last checkpoint covers the whole log');
$r = run_cmd([$SKTimeline::TL, '--check', '-c', "$d/tl.conf"]);
is($r->{rc}, 0, '--check passes') or diag($r->{out});

done_testing();
