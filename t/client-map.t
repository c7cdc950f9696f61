#!/usr/bin/perl

# client-map.t -- trust no mirror (issue 23): a lying mirror (t/lib/SKLiar.pm,
# a proxy with its own mirror key in front of the real sk-mirror) tells
# each lie a mirror can tell about a name, and the client's map check
# (docs/protocol.md, "The client rule") refuses it in every entry point:
# sk verify, sk fetch and the C API (tests/unit/tls_drive.c,
# sk_tls_lookup / sk_tls_prepare).  With the liar first and the honest
# mirror second, the honest answer decides; with only the liar, the
# client fails closed (undecided, exit 5) and sends nothing to the server
# (nginx's access log).
#
# Real parts: three sk-timelines closing each batch with a Map-Root
# entry, an sk-mirror, nginx serving an impostor's certificate for
# example.com (no carrier: rejected while the SK is known) and a plain one
# for gone.example (bound, then unbound: none).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Digest::SHA qw(sha256);
use JSON::PP;
use Test::More;

use SKTest;
use NginxTest;
use SKSite;
use SKLiar;
use SKTimeline ();
use SKMirror ();

my $DRIVE = "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/tests/tls_drive';
my ($ngx, $d) = NginxTest->setup;
plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR;
plan skip_all => "no $DRIVE" unless -x $DRIVE;

my $w = world($d, names => { 'example.com' => 'https',
    'gone.example' => 'https' }, mirror => { query_cache => 0 });
my $m = $w->{mirror};
my @tids = (7, 8, 9);
my $tlconf = join('', map { "timeline = $_ $d/tl$_/timeline.pub\n" } @tids);

# gone.example's answer while it is bound (for the replay), then its
# Unbind on every timeline.
my $bound = SKMirror::query($m, 'gone.example')->{body};
like($bound, qr/^Map-Proof: /m, 'the mirror\'s answers carry map proofs')
    or BAIL_OUT('no Map-Proof lines: ' . substr($bound, 0, 400));
my $unbind = SKTimeline::unbind_entry(name => 'gone.example',
    key => $w->{sk}{'gone.example'});
for my $tid (@tids) {
    my $r = SKTimeline::append($w->{timelines}{$tid}, $unbind);
    is($r->{code}, 201, "timeline $tid: Unbind gone.example")
        or diag($r->{body});
}
ok(wait_until(sub {
    my $b = SKMirror::query($m, 'gone.example')->{body};
    return (() = $b =~ /^Unbind: 1$/mg) == 3;
}, 30), 'the mirror serves the Unbind on every timeline');

# The servers: an impostor for example.com, a plain site for gone.example.
my $ca = NginxTest::make_ca($d);
my $p = $ngx->port('default');
my $conf = '';
for my $n ('example.com', 'gone.example') {
    my ($cert, $key) = make_cert($d, $n, 'rsa');
    mkdir "$d/www-$n";
    spew("$d/www-$n/index.html", "$n\n");
    $conf .= "    server {\n        listen 127.0.0.1:$p ssl;\n"
        . "        server_name $n;\n        root $d/www-$n;\n"
        . "        access_log $d/access-$n.log;\n"
        . "        ssl_certificate $cert;\n"
        . "        ssl_certificate_key $key;\n    }\n";
}
$ngx->write_conf($conf);
is($ngx->test_conf->{rc}, 0, 'nginx -t');
$ngx->start;

sub requests {
    my ($n) = @_;
    my $f = "$d/access-$n.log";
    return -e $f ? scalar(() = slurp($f) =~ /"GET \//g) : 0;
}

# Two liars (one lie at a time, written to their DIR/lie).
my @liars = map { SKLiar::start("$d/liar$_", $m->{url}) } 1, 2;
spew("$_->{dir}/replay", $bound) for @liars;
sub lie { SKLiar::lie($_, $_[0]) for @liars }

my %exit = (accept => 0, reject => 1, none => 3, undecided => 5);
my %honest = ('example.com' => 'reject', 'gone.example' => 'none');

# Trust: the liars first, then (unless only) the honest mirror.
sub trust {
    my ($tag, $only, $extra) = @_;
    my $f = "$d/trust-$tag.conf";
    spew($f, $tlconf . join('', map { "mirror = $_->{url} $_->{pub}\n" }
        $only ? @liars : $liars[0])
        . ($only ? '' : "mirror = $m->{url} $m->{pub}\n")
        . "max_derelict = 3\n" . ($extra // ''));
    return $f;
}

# Each entry point, for name, with trust file $t and cache $c (made
# fresh by $prep): the decision, the exit status, whether the request
# reached nginx, and what the client said.
sub run_all {
    my ($what, $name, $t, $prep, $want, $why) = @_;
    my $url = "https://$name:$p";
    my $sent = $want eq 'undecided' || $want eq 'reject' ? 'no' : 'yes';
    my $c = "$d/cache";

    $prep->($c);
    my $r = sk('verify', '--trust', $t, '--cache', $c, '--connect',
        "127.0.0.1:$p", '--no-staple', '--json', $url);
    my $j = eval { decode_json($r->{out}) } // {};
    is($j->{decision} // '', $want, "$what: sk verify: $want")
        or diag($r->{out} . $r->{err});
    is($r->{rc}, $exit{$want}, "$what: sk verify: exit $exit{$want}");
    my @said = map { $_->{result} } @{$j->{mirrors} // []};
    ok((grep { /\Q$why\E/ } @said), "$what: sk verify says why: $why")
        or diag(explain(\@said));
    if ($want ne 'undecided') {
        my %map = map { $_->{tid} => $_->{map} } @{$j->{checkpoints}};
        is_deeply([map { $map{$_} // '' } @tids], [('present') x 3],
            "$what: --json: the honest answer proves the history on 7, 8, 9");
    }

    $prep->($c);
    my $before = requests($name);
    $r = sk('fetch', '-v', '--trust', $t, '--cache', $c, '--cacert', $ca,
        '--no-staple', '--resolve', "$name:$p:127.0.0.1", '-o', "$d/body",
        $url);
    my $fexit = $want eq 'none' ? 0 : $exit{$want};
    is($r->{rc}, $fexit, "$what: sk fetch: exit $fexit")
        or diag($r->{out} . $r->{err});
    like($r->{err}, qr/\Q$why\E/, "$what: sk fetch says why");
    is(requests($name) > $before ? 'yes' : 'no', $sent,
        "$what: sk fetch: request sent: $sent");

    for my $mode ('lookup', 'prepare') {
        $prep->($c);
        $before = requests($name);
        $r = run_cmd([$DRIVE, $mode, $t, $c, $name, $p, '127.0.0.1', $ca]);
        is($r->{out}, "decision=$want sent=$sent\n",
            "$what: sk_tls_$mode: $want") or diag($r->{err});
        is($r->{rc}, $exit{$want}, "$what: sk_tls_$mode: exit");
        is(requests($name) > $before ? 'yes' : 'no', $sent,
            "$what: sk_tls_$mode: request sent: $sent");
    }
}

my $empty = sub { run_cmd(['rm', '-rf', $_[0]]) };

# Honest liars first: the proxy itself is sound.
lie('honest');
run_all('honest proxy', 'example.com', trust('h', 1), $empty, 'reject',
    'fresh');

my @lies = (
    ['drop-newest', 'example.com', 'map proof: the name is in the map of'],
    ['absent', 'example.com', 'map proof: the name is in the map of'],
    ['absent-fake', 'example.com', 'map proof: '],
    ['swap', 'example.com', 'map proof: '],
    ['drop-unbind', 'gone.example', 'map proof: the 1 entries given'],
);
for my $l (@lies) {
    my ($lie, $name, $why) = @$l;
    lie($lie);
    run_all("$lie, then the honest mirror", $name, trust("$lie-h", 0),
        $empty, $honest{$name}, $why);
    run_all("$lie only", $name, trust("$lie-o", 1), $empty, 'undecided',
        $why);
}

# The staple a server fetches (sk staple fetch; nginx's refresher and
# sk-milter run the same code): a lying answer is not stapled.
lie('absent');
my $r = sk('staple', 'fetch', '--trust', trust('st-o', 1), '-o',
    "$d/st-o", 'example.com');
isnt($r->{rc}, 0, 'sk staple fetch from lying mirrors only: no staple');
like($r->{out} . $r->{err}, qr/map proof/, '... saying why');
$r = sk('staple', 'fetch', '--trust', trust('st-h', 0), '-o', "$d/st-h",
    'example.com');
is($r->{rc}, 0, 'sk staple fetch, a liar then the mirror: a staple')
    or diag($r->{out} . $r->{err});
my $mfpr = 'sha256:' . unpack('H*', sha256(SKTimeline::ossl('pkey',
    '-pubin', '-in', $m->{pub}, '-outform', 'DER')));
like(-e "$d/st-h" ? slurp("$d/st-h") : '',
    qr/^Answer: example\.com \Q$mfpr\E /m, '... of the honest mirror\'s answer');

# A replay of gone.example's answer from before its Unbind: its map proof
# holds for its own, older checkpoint, so only the cache and freshness can
# tell.  With the Unbind in the cache (t1 = 0: ask anyway), the answer's
# trees are smaller than the cache's: not believed (the liar is not
# dropped: a mirror may lag), the honest mirror decides.
lie('honest');
my $held = "$d/held";
$r = sk('verify', '--trust', trust('held', 0), '--cache', $held,
    '--connect', "127.0.0.1:$p", '--no-staple', "https://gone.example:$p");
is($r->{rc}, 3, 'the held cache: gone.example unbound') or diag($r->{out});
lie('replay');
run_all('replay, cache held', 'gone.example', trust('rh', 0, "t1 = 0\n"),
    sub { $empty->($_[0]); run_cmd(['cp', '-a', $held, $_[0]]) }, 'none',
    'is older than what the client holds');
# With nothing cached, a replay older than T2 is stale: fail closed.
$r = sk('verify', '--trust', trust('rs', 1, "t2 = 1\n"), '--cache',
    "$d/cache-rs", '--connect', "127.0.0.1:$p", '--no-staple', '--json',
    "https://gone.example:$p");
my $j = eval { decode_json($r->{out}) } // {};
like(($j->{mirrors} // [{}])->[0]{result} // '', qr/^stale: 0 of 3 /,
    'replay, nothing cached, t2 = 1: the replay is stale')
    or diag($r->{out} . $r->{err});
is($j->{freshness} // '', 'fail-closed',
    '... no fresh enough answer: fail closed (an SK the replay shows is '
    . 'still enforced, as for any stale answer)');

is($ngx->alerts, '', 'no alerts in the nginx log');
$ngx->stop;
stop_daemon($_->{pid}) for @liars;
stop_world($w);
done_testing();
