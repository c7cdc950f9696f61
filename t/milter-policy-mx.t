#!/usr/bin/perl
# Outbound pinning end to end, with MX records: a sending Postfix whose
# smtp_tls_policy_maps is sk-milter's PolicySocket (StapleTrust: real
# sk-timelines and an sk-mirror; PolicyCache on disk), real MX hosts on
# port 25 of their own addresses serving carriers, and an impostor MX (a
# certificate for every MX name from the same CA, no carrier) that takes
# over an MX address, as an attacker on the path would, while DNS is
# left intact; or the MX records themselves are changed to an attacker's
# host that has an SK and a valid carrier of its own.  For each case the
# impostor receives nothing, the queue keeps every message, and once the
# route is back every message reaches the real MX:
#
#   trust.test     known from the TrustFile
#   first.test     known only from the mirror (first contact); then, past
#                  PolicyTTL and a restart of the milter, with the mirror
#                  down: from the client cache
#   example.test   runs its own MX: mx.example.test serves a carrier by
#                  example.test's SK, and (sk-milter's StapleProof on the
#                  MX) a staple holding example.test's answer, which is
#                  all the sending policy has with the mirror down
#   hosted1.test, hosted2.test  hosted at mx.provider.test: their records
#                  say "smtp;mx=*.provider.test", and provider.test's SK
#                  (Includes-Subdomains) cross-signs the provider's host
#                  and a policy with no StapleTrust takes example.test's
#                  SK from the KeyCache record sk publish -r wrote
#   first.test     again, the mirror down and nothing cached (the cache
#                  emptied): undecided, TEMP (PolicyUndecided defer)
#   MX records of example.test and hosted1.test changed to
#                  mx.attacker.test (a carrier by the attacker's own SK):
#                  their records vouch for no such host
#
# One private network namespace (unshare -mn) holds it all: the MX hosts
# listen on 127.0.0.x:25, NSD serves the test. zone on 127.0.0.1:53.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Socket::INET;
use Time::HiRes qw(time);
use SKTest;
use SKDNS;
use SKPostfix qw(private_hosts_reexec private_hosts);
use SKSite;
use SKTimeline ();
use SKMirror ();
use NginxTest ();

my $skm = $ENV{SKM_BIN}
    // "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/sk-milter';
plan(skip_all => "no $skm") unless -x $skm;
plan(skip_all => 'sk-timeline or sk-mirror not built')
    unless -x $SKTimeline::TL && -x $SKMirror::MR;
for (qw(postfix postqueue smtp-sink swaks nsd openssl)) {
    plan(skip_all => "no $_") unless has_cmd($_);
}
my $why = private_hosts_reexec(net => 1);
plan(skip_all => $why) if $why;
my $d = tmpdir();
chmod 0755, $d;
$why = private_hosts($d);
plan(skip_all => $why) if $why;

my $TTL = 2;                    # the sender's PolicyTTL
my $t0 = time;

# MX hosts: the real ones and the attacker's.
my %ip = ('mx.example.test' => '127.0.0.10', 'mx.trust.test' => '127.0.0.11',
    'mx.first.test' => '127.0.0.12', 'mx.provider.test' => '127.0.0.20',
    'mx.attacker.test' => '127.0.0.66');
my %mx = ('example.test' => 'mx.example.test', 'trust.test' => 'mx.trust.test',
    'first.test' => 'mx.first.test', 'hosted1.test' => 'mx.provider.test',
    'hosted2.test' => 'mx.provider.test', 'attacker.test' => 'mx.attacker.test');
sub zone {
    my (%over) = @_;
    my %m = (%mx, %over);
    return "\$ORIGIN test.\n\$TTL 1\n"
        . "\@ IN SOA ns.test. hostmaster.test. 1 60 60 60 1\n"
        . "\@ IN NS ns.test.\nns IN A 127.0.0.1\n"
        . join('', map { "$_. IN MX 10 $m{$_}.\n" } sort keys %m)
        . join('', map { "$_. IN A $ip{$_}\n" } sort keys %ip);
}
my $dns = start_zones("$d/dns", 53, { 'test.' => zone() });
ok($dns->{up}, 'NSD serves the test. zone') or BAIL_OUT(slurp($dns->{log}));
note(sprintf('DNS up at %.1f s', time - $t0));

# The SKs, on three timelines and a mirror.  trust.test is known from the
# TrustFile only; the attacker's SK is his own.
mkdir "$d/w";
my $w = world("$d/w", names => { 'example.test' => 'smtp',
    'first.test' => 'smtp', 'hosted1.test' => 'smtp;mx=*.provider.test',
    'hosted2.test' => 'smtp;mx=*.provider.test', 'provider.test' => 'smtp' },
    subdomains => ['provider.test']);
my $m = $w->{mirror};
note(sprintf('timelines and mirror up at %.1f s', time - $t0));
my %sk = %{$w->{sk}};
for my $n ('trust.test', 'attacker.test') {
    my $r = sk('keygen', '-n', $n, '-o', "$d/$n.key",
        '--no-backups-i-accept-the-risk');
    is($r->{rc}, 0, "sk keygen $n") or diag($r->{err});
    $sk{$n} = "$d/$n.key";
}

# Certificates from one CA; a carrier for each real MX host by its
# domain's SK (mx.provider.test by provider.test's, mx.attacker.test by
# attacker.test's).
NginxTest::make_ca($d);
my %chain;
for my $dom (qw(example.test trust.test first.test provider.test
    attacker.test))
{
    my $host = $dom eq 'provider.test' ? 'mx.provider.test' : $mx{$dom};
    my ($cert, $key) = NginxTest::make_cert($d, $host, 'ec');
    NginxTest::make_carrier($sk{$dom}, $cert, $host, "$d/$host.carrier",
        '-s', 'smtp');
    spew("$d/$host.source", slurp($key) . slurp($cert), 0600);
    $chain{$host} = "$d/$host.chain";
    spew($chain{$host}, slurp("$d/$host.source")
        . slurp("$d/$host.carrier"), 0600);
}
my ($icert, $ikey) = NginxTest::make_cert($d, 'impostor', 'ec',
    [sort grep { $_ ne 'mx.attacker.test' } keys %ip]);
spew("$d/impostor.chain", slurp($ikey) . slurp($icert), 0600);

# The real MX: a listener on each MX address.  mx.example.test's chain
# is written by sk-milter (StapleProof): its carrier, and a staple of
# mx.example.test's and example.test's answers.
mkdir "$d/$_" for qw(real imp src kc);
my $mxport = free_port();
my $real = SKPostfix->new(dir => "$d/real",
    milter => "inet:127.0.0.1:$mxport",
    main => { myhostname => 'real.mx.test' });
my $imp = SKPostfix->new(dir => "$d/imp", main => {
    myhostname => 'impostor.mx.test',
    smtpd_tls_chain_files => "$d/impostor.chain" });
sub listen_on {
    my ($pf, $ip, $chain) = @_;
    $pf->postconf('-M', "$ip:25/inet=$ip:25 inet n - n - - smtpd"
        . ($chain ? " -o smtpd_tls_chain_files=$chain" : ''));
}
my $served = "$d/mx.example.test.served";
for my $host (sort keys %ip) {
    next if $host eq 'mx.attacker.test';
    listen_on($real, $ip{$host}, $host eq 'mx.example.test' ? $served
        : $chain{$host});
}
# The attacker's own host, with its own valid carrier.
listen_on($imp, $ip{'mx.attacker.test'}, $chain{'mx.attacker.test'});

# The MX's sk-milter checks the mail it receives against the records in
# its KeyCache, which `sk publish -r` writes from the mirror.
my $r = sk('publish', '-r', 'example.test', '-r', 'nosk.test', '--trust',
    $w->{trust}, '--cache', "$d/kc");
is($r->{rc}, 0, 'sk publish -r: the records from the mirror')
    or diag($r->{out} . $r->{err});
like($r->{out}, qr/^sk:record:example\.test sha256:[0-9a-f]{64} services smtp \(3 entries, from mirror \Q$m->{url}\E\)$/m,
    '... example.test\'s SK and services') or diag($r->{out});
like($r->{out}, qr/^sk:record:nosk\.test removed: no SK$/m,
    '... a name with no SK has none');
my $mxlog = "$d/mx-milter.log";
spew("$d/mx-milter.conf", join('', map { "$_\n" }
    "Socket inet:$mxport\@127.0.0.1", 'Name mx.example.test',
    "KeyCache $d/kc", 'AuthservID real.mx.test',
    'Syslog no', "CarrierFile $d/mx.example.test.carrier",
    "ChainFile $d/mx.example.test.source $served",
    "PostfixCommand postfix -c $real->{etc} reload", 'RefreshInterval 60',
    'StapleProof yes', "StapleTrust $w->{trust}"));
my $mxpid = run_daemon([$skm, '-f', '-c', "$d/mx-milter.conf"], $mxlog);
ok(wait_until(sub { -e $mxlog && slurp($mxlog)
    =~ /wrote \Q$served\E with its carrier and a staple/ }, 20),
    'StapleProof: the MX\'s chain file gets its carrier and a staple')
    or diag(slurp($mxlog));
like(slurp($mxlog), qr/staple example\.test: from mirror/,
    '... the staple holds the domain\'s answer too') or diag(slurp($mxlog));
$real->start;
$imp->start;
note(sprintf('MX hosts up at %.1f s', time - $t0));

# The sender: its Postfix delivers by MX records, asking sk-milter.
my ($pport, $mport) = (free_port(), free_port());
my $slog = "$d/milter.log";
spew("$d/trustfile", "trust.test smtp $d/trust.test.key.pub\n");
spew("$d/sk-milter.conf", join('', map { "$_\n" }
    "Socket inet:$mport\@127.0.0.1", 'Name mx.src.test', 'Syslog no',
    "TrustFile $d/trustfile", "StapleTrust $w->{trust}",
    "PolicySocket inet:$pport\@127.0.0.1", "PolicyCache $d/pcache",
    "PolicyTTL $TTL"));
my $spid;
sub milter {
    $spid = run_daemon([$skm, '-f', '-c', "$d/sk-milter.conf"], $slog);
    ok(wait_for_port($pport), 'the sender\'s sk-milter listens')
        or diag(slurp($slog));
}
milter();
# A sender's policy with no StapleTrust (no mirror to ask): its admin's
# own entries are the TrustFile and the KeyCache records sk publish -r
# wrote.
my ($kport, $kmport) = (free_port(), free_port());
my $klog = "$d/kc-milter.log";
spew("$d/kc-milter.conf", join('', map { "$_\n" }
    "Socket inet:$kmport\@127.0.0.1", 'Name mx.src.test', 'Syslog no',
    "KeyCache $d/kc", "PolicySocket inet:$kport\@127.0.0.1", 'PolicyTTL 0'));
my $kpid = run_daemon([$skm, '-f', '-c', "$d/kc-milter.conf"], $klog);
ok(wait_for_port($kport), 'the KeyCache-only policy listens')
    or diag(slurp($klog));
my $src = SKPostfix->new(dir => "$d/src", main => {
    myhostname => 'mx.src.test',
    relayhost => '',
    smtp_dns_support_level => 'enabled',
    smtp_host_lookup => 'dns',
    smtp_tls_security_level => 'may',
    smtp_tls_policy_maps => "socketmap:inet:127.0.0.1:$pport:sk",
    smtp_tls_fingerprint_digest => 'sha256',
    smtp_tls_loglevel => 1,
    # every delivery makes its own connection, after its own lookup
    smtp_connection_cache_on_demand => 'no',
})->start;

# The KeyCache-only policy's answer for a next hop: [rc, value].
sub kq {
    my ($k) = @_;
    my $r = run_cmd(['postmap', '-c', $src->{etc}, '-q', $k,
        "socketmap:inet:127.0.0.1:$kport:sk"]);
    chomp(my $v = $r->{out});
    return [$r->{rc}, $v . $r->{err}];
}

# Who answers on an MX address: the first line it sends.
sub greeting {
    my ($ip) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => "$ip:25", Timeout => 2)
        or return '';
    my $l = <$s> // '';
    close $s;
    return $l;
}
# The addresses of HOSTS move from one Postfix to the other: their
# listeners go (one reload), the addresses fall silent, the other listens
# there (one reload) and greets.
sub move {
    my ($hosts, $from, $to, $banner, $what) = @_;
    $from->postconf('-MX', "$ip{$_}:25/inet") for @$hosts;
    $from->postfix('reload');
    ok(wait_until(sub { !grep { greeting($ip{$_}) ne '' } @$hosts }, 15),
        "@$hosts: $what: the addresses are let go");
    listen_on($to, $ip{$_}, $to == $real ? ($_ eq 'mx.example.test'
        ? $served : $chain{$_}) : undef) for @$hosts;
    $to->postfix('reload');
    ok(wait_until(sub { !grep { greeting($ip{$_}) !~ /$banner/ } @$hosts },
        15), "@$hosts: $what: $banner answers there") or diag($to->log);
}
# The route to the MX addresses taken over: the impostor answers there.
sub takeover { move([@_], $real, $imp, 'impostor', 'route taken over') }
sub restore { move([@_], $imp, $real, 'real', 'route back') }

sub send_to {
    my ($rcpt, $subj, $from) = @_;
    my $r = run_cmd(['swaks', '--server', '127.0.0.1', '--port',
        $src->{smtp}, '--from', $from // 'alice@src.test', '--to', $rcpt,
        '--header', "Subject: $subj", '--timeout', '10']);
    is($r->{rc}, 0, "queued: $subj") or diag($r->{out});
}
sub subjects {
    my ($pf, $re) = @_;
    return scalar grep { /^Subject: $re\r?$/m } $pf->messages;
}
sub queued {
    my $r = run_cmd(['postqueue', '-c', $src->{etc}, '-j']);
    return scalar(() = $r->{out} =~ /"queue_id"/g);
}
# N deliveries attempted and deferred since the log was LEN long.
sub deferred_since {
    my ($len, $n) = @_;
    return wait_until(sub { my $l = substr($src->log, $len);
        (() = $l =~ /status=deferred/g) >= $n }, 20);
}

# One round of cases: mail to RCPTS while the routes to their MX hosts
# are taken over (ATTACK): none reaches the impostor, all stay queued,
# the policy says why (LOGS); then UNDO, a flush, and all reach the real
# MX.
sub attack_case {
    my (%c) = @_;
    my $tag = $c{tag};
    my ($imp0, $len) = (scalar($imp->messages), length $src->log);
    my $q0 = queued();
    $c{attack}->();
    send_to($_, "$tag $_") for @{$c{rcpts}};
    my $n = @{$c{rcpts}};
    ok(deferred_since($len, $n), "$tag: $n deliveries tried and deferred")
        or diag(substr($src->log, $len) . slurp($slog));
    is(scalar($imp->messages) - $imp0, 0, "$tag: the impostor received "
        . 'nothing');
    is(queued() - $q0, $n, "$tag: the queue keeps every message");
    like(slurp($slog), $_, "$tag: the policy says why: $_")
        for @{$c{logs}};
    $c{undo}->();
    run_cmd(['postqueue', '-c', $src->{etc}, '-f']);
    ok(wait_until(sub { subjects($real, qr/\Q$tag\E .*/) == $n }, 30),
        "$tag: once the route is back, every message reached the real MX")
        or diag(substr($src->log, $len) . slurp($slog));
    is(queued(), $q0, "$tag: the queue is empty again");
    note(sprintf('%s: done at %.1f s', $tag, time - $t0));
}

# Mirror up, nothing cached: a TrustFile domain, a first contact (only
# the mirror knows first.test), and two domains hosted on one provider
# MX.
attack_case(tag => 'first-round',
    rcpts => ['bob@trust.test', 'carol@trust.test', 'bob@first.test',
        'carol@first.test', 'bob@hosted1.test', 'carol@hosted2.test'],
    attack => sub { takeover('mx.trust.test', 'mx.first.test',
        'mx.provider.test') },
    undo => sub { restore('mx.trust.test', 'mx.first.test',
        'mx.provider.test') },
    logs => [qr/policy trust\.test: deferring: trust\.test's SK covers smtp \(from the TrustFile\)/,
        qr/policy first\.test: deferring: first\.test's SK covers smtp \(from mirror \Q$m->{url}\E\)/,
        qr/policy hosted2\.test: mx\.provider\.test:25: mx\.provider\.test matches hosted2\.test's mx=\*\.provider\.test: mx\.provider\.test has an SK \S+ for smtp, but the server presented no carrier/]);
like(slurp($slog), qr/policy first\.test: pinned match=\S+ \(first\.test's SK from (mirror|the cache)/,
    'first contact: pinned once the real MX is back');
like(slurp($slog), qr/policy hosted1\.test: pinned match=\S+ \(hosted1\.test's SK from (mirror|the cache)/,
    'hosted: pinned to the provider\'s key once it is back');
like(slurp($slog), qr/policy hosted1\.test: mx\.provider\.test:25: mx\.provider\.test matches hosted1\.test's mx=\*\.provider\.test: carrier for mx\.provider\.test by the SK in force/,
    '... which its own SK cross-signs');

# The mirror down, the milter restarted: first.test from the cache, past
# PolicyTTL; example.test, a first contact, from its own MX's staple.
is(stop_daemon($spid), 0, 'the sender\'s sk-milter stops');
stop_daemon($m->{pid});
# sk publish -r from a timer changes nothing while no mirror answers.
my $rec0 = slurp("$d/kc/record/example.test");
$r = sk('publish', '-r', 'example.test', '--trust', $w->{trust}, '--cache',
    "$d/kc");
is($r->{rc}, 5, 'sk publish -r, the mirror down: undecided (exit 5)')
    or diag($r->{out} . $r->{err});
is(slurp("$d/kc/record/example.test"), $rec0, '... the record left as it '
    . 'was');
milter();
send_to('eve@example.test', 'staple first');
ok(wait_until(sub { subjects($real, qr/staple first/) == 1 }, 20),
    'own MX: delivered from the staple alone') or diag(slurp($slog));
like(slurp($slog), qr/policy example\.test: pinned match=\S+ \(example\.test's SK from mx\.example\.test's staple \(answer of \Q$m->{url}\E\)\)/,
    '... the policy says it learnt the SK from the MX\'s staple');
like(slurp($slog), qr/policy example\.test: mx\.example\.test:25: carrier for mx\.example\.test by the SK in force/,
    '... and that the domain\'s SK cross-signs its MX host');
sleep $TTL;
attack_case(tag => 'mirror-gone', rcpts => ['bob@first.test',
    'carol@first.test', 'bob@example.test', 'carol@example.test'],
    attack => sub {
        takeover('mx.first.test', 'mx.example.test');
        my $a = kq('example.test');
        isnt($a->[0], 0, 'KeyCache record, no StapleTrust: TEMP for the '
            . 'impostor') or diag("@$a");
        like(slurp($klog), qr/policy example\.test: deferring: example\.test's SK covers smtp \(from the KeyCache record\)/,
            '... the KeyCache record decided it') or diag(slurp($klog));
    },
    undo => sub {
        restore('mx.first.test', 'mx.example.test');
        like(kq('example.test')->[1], qr/^fingerprint match=/,
            'KeyCache record: pinned to the real MX once the route is back')
            or diag(slurp($klog));
        my $a = kq('first.test');
        is($a->[0], 1, 'no KeyCache record, no StapleTrust: NOTFOUND')
            or diag("@$a");
        like(slurp($klog), qr/policy first\.test: NOTFOUND: not in the TrustFile nor the KeyCache, and no StapleTrust/,
            '... logged');
    },
    logs => [qr/policy first\.test: deferring: first\.test's SK covers smtp \(from the cache\)/,
        qr/policy example\.test: deferring: example\.test's SK covers smtp \(from the cache\)/]);

# The mirror down and nothing cached (first.test's view removed from
# the cache, the pinned answer of the last round past PolicyTTL):
# undecided.
sleep $TTL;
attack_case(tag => 'mirror-down', rcpts => ['bob@first.test',
    'carol@first.test'],
    attack => sub {
        ok(unlink("$d/pcache/names/first.test"), 'first.test\'s view '
            . 'taken out of the cache');
        takeover('mx.first.test');
    },
    undo => sub {
        restore('mx.first.test');
        $m = SKMirror::restart_mirror($m);
        ok(wait_until(sub { SKMirror::query($m, 'first.test')->{code}
            == 200 }, 30), 'the mirror is back') or diag(slurp($m->{log}));
    },
    logs => [qr/policy first\.test: deferring: undecided: /]);

# The MX records changed to the attacker's host, which has an SK and a
# valid carrier of its own.  A reload empties the answer cache.
my $n = () = slurp($slog) =~ /reloaded /g;
attack_case(tag => 'mx-changed', rcpts => ['bob@example.test',
    'carol@hosted1.test', 'dan@example.test'],
    attack => sub {
        $dns = restart_zones($dns, { 'test.' => zone('example.test' =>
            'mx.attacker.test', 'hosted1.test' => 'mx.attacker.test') });
        kill 'HUP', $spid;
        wait_until(sub { (() = slurp($slog) =~ /reloaded /g) > $n }, 10);
    },
    undo => sub {
        $dns = restart_zones($dns, { 'test.' => zone() });
        my $n2 = () = slurp($slog) =~ /reloaded /g;
        kill 'HUP', $spid;
        wait_until(sub { (() = slurp($slog) =~ /reloaded /g) > $n2 }, 10);
    },
    logs => [qr/policy hosted1\.test: mx\.attacker\.test:25: .*matches none of hosted1\.test's mx= patterns/,
        qr/policy example\.test: mx\.attacker\.test:25: example\.test has an SK \(sha256:\w+\) for smtp: carrier for mx\.attacker\.test: made for SK/]);
# The KeyCache record at work: mail from example.test came over TLS.
send_to('bob@hosted2.test', 'from example.test', 'alice@example.test');
ok(wait_until(sub { subjects($real, qr/from example\.test/) == 1 }, 20),
    'mail from example.test delivered');
my ($got) = grep { /^Subject: from example\.test\r?$/m } $real->messages;
like($got // '', qr/^Authentication-Results: real\.mx\.test;\s+sk=pass \(TLSv1\.[23] for smtp service\)\s+smtp\.mailfrom=example\.test/m,
    'the MX checked it against the record sk publish -r wrote: sk=pass')
    or diag($got);

is(subjects($imp, qr/.*/), 0, 'the impostor and the attacker received '
    . 'nothing at all');

is(stop_daemon($spid), 0, 'sk-milter: clean exit');
is(stop_daemon($kpid), 0, 'the KeyCache-only sk-milter: clean exit');
is(stop_daemon($mxpid), 0, 'the MX\'s sk-milter: clean exit');
$src->stop;
$real->stop;
$imp->stop;
stop_world($w);
stop_daemon($dns->{nsd});
done_testing();
