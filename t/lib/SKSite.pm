package SKSite;

# SKSite -- a whole sovereign-keys world for the client tests and
# benchmarks, from real parts: a CA the timelines trust, real
# sk-timelines, names bound with their own Ed25519 SKs, an sk-mirror
# serving them, a trust file; and the nginx server blocks of the real
# site (certificates from NginxTest's CA, the module serving each SK's
# carrier, a page naming the site).  Dies on any failure.
#
#   my $w = world(DIR, names => { NAME => SERVICES, ... },
#                 unbind => [NAME, ...], tids => [7, 8, 9],
#                 rebinders => { NAME => REBINDER-NAMES },
#                 trust => "t1 = 0\n", mirror => { KEY => VALUE })
#       $w->{tlca}          the CA the timelines trust (make evidence with
#                           SKTimeline::issue(DIR, $w->{tlca}, KEY, NAME, OUT))
#       $w->{sk}{NAME}      the SK's private key file (NAME's .pub beside)
#       $w->{trust}         trust file: the timelines, the mirror, + trust
#       $w->{mirror}        SKMirror's hash; $w->{timelines}{TID}
#   site(W, DIR, PORT, NAME...)   nginx server blocks on PORT for each
#       NAME (a bound one with its carrier), DIR/www-NAME/index.html
#       saying "the real NAME\n"; returns the text for write_conf.
#       NginxTest::make_ca(DIR) must have run.
#   stop_world(W)
#   one_staple(NAME, FPR, ANSWER)   a staple of one answer for NAME, signed
#       by the mirror key of fingerprint FPR ("sha256:...")
#   bad_staples(DIR, GOOD)   from GOOD, a staple of one answer (as `sk
#       staple fetch` writes it): { fpr => its mirror's fingerprint,
#       tampered => a staple whose answer has a Timestamp changed (the
#       mirror's signature fails), untrusted => one re-signed by a mirror
#       key made here that no trust file lists, fakefpr => its fingerprint }

use strict;
use warnings;

use Digest::SHA qw(sha256);
use Exporter 'import';
use SKTest;
use SKTimeline ();
use SKMirror ();
use NginxTest ();

our @EXPORT = qw(world site stop_world one_staple bad_staples);

sub world {
    my ($d, %a) = @_;
    my $names = $a{names};
    my @tids = @{$a{tids} // [7, 8, 9]};
    my $w = { dir => $d, sk => {} };

    my $op = SKTimeline::ed25519_key($d, 'operator');
    my $tlca = $w->{tlca} = SKTimeline::make_ca($d, 'tlca');
    my @entries = (SKTimeline::root_entry(cert => "$tlca.crt", key => $op));
    for my $n (sort keys %$names) {
        my $sk = $w->{sk}{$n} = SKTimeline::ed25519_key($d, "sk-$n");
        my $ev = SKTimeline::issue($d, $tlca, $sk, $n, "$d/ev-$n");
        push @entries, SKTimeline::bind_entry(name => $n, key => $sk,
            services => $names->{$n}, chain => [$ev],
            rebinders => ($a{rebinders} // {})->{$n},
            subdomains => (grep { $_ eq $n } @{$a{subdomains} // []}) ? 1 : 0);
    }
    push @entries, SKTimeline::unbind_entry(name => $_, key => $w->{sk}{$_})
        for @{$a{unbind} // []};

    my @tl;
    for my $tid (@tids) {
        mkdir "$d/tl$tid";
        my $t = $w->{timelines}{$tid} = SKTimeline::start_timeline(
            "$d/tl$tid", tid => $tid, operator_key => "$d/operator.pub",
            chunk_interval => 1);
        die "SKSite: timeline $tid did not start: " . slurp($t->{log})
            unless $t->{up};
        for my $e (@entries) {
            my $r = SKTimeline::append($t, $e);
            die "SKSite: timeline $tid: $r->{code} $r->{body}"
                if $r->{code} != 201;
        }
        push @tl, [$tid, $t->{url}, "$d/tl$tid/timeline.pub",
            "sk-timeline-$tid"];
    }
    my $m = $w->{mirror} = SKMirror::start_mirror("$d/m", \@tl,
        %{$a{mirror} // {}});
    die "SKSite: sk-mirror did not start: " . slurp($m->{log}) unless $m->{up};

    # Ready once every timeline's entries reach the mirror's answers.
    my %keys = map { $_->[0] => [$_->[2], $_->[3]] } @tl;
    my %want;
    $want{$_}++ for keys %$names;
    $want{$_}++ for @{$a{unbind} // []};
    my $ready = wait_until(sub {
        for my $n (keys %want) {
            my $r = SKMirror::query($m, $n);
            my $ans = SKMirror::check_answer($r->{body}, $m->{pub}, \%keys);
            return 0 unless $r->{code} == 200 && $ans->{ok};
            return 0 if grep { @{$ans->{timelines}{$_}{entries} // []}
                != $want{$n} } @tids;
        }
        return 1;
    }, 30);
    die "SKSite: the mirror does not serve every entry: "
        . slurp($m->{log}) unless $ready;

    $w->{trust} = "$d/trust.conf";
    spew($w->{trust}, join('', map { "timeline = $_->[0] $_->[2]\n" } @tl)
        . "mirror = $m->{url} $m->{pub}\n" . ($a{trust} // ''));
    return $w;
}

sub site {
    my ($w, $d, $port, @names) = @_;
    my $conf = '';

    for my $n (@names) {
        my ($cert, $key) = NginxTest::make_cert($d, $n, 'ec');
        mkdir "$d/www-$n";
        spew("$d/www-$n/index.html", "the real $n\n");
        my $sk = $w->{sk}{$n};
        my $carrier = $sk ? NginxTest::make_carrier($sk, $cert, $n,
            "$d/carrier-$n.pem") : undef;
        (my $pub = $sk // '') =~ s/\.key$/.pub/;
        $conf .= "    server {\n        listen 127.0.0.1:$port ssl;\n"
            . "        server_name $n;\n        root $d/www-$n;\n"
            . "        ssl_certificate $cert;\n"
            . "        ssl_certificate_key $key;\n"
            . ($carrier ? "        sovereign_key_public $pub;\n"
                . "        sovereign_key_carrier $carrier;\n" : '')
            . "    }\n";
    }
    return $conf;
}

sub one_staple {
    my ($name, $fpr, $answer) = @_;
    return "SK-Staple: 1\nAnswers: 1\nAnswer: $name $fpr "
        . length($answer) . "\n$answer";
}

sub bad_staples {
    my ($d, $good) = @_;
    my ($name, $fpr, $answer) = $good
        =~ /^Answer: (\S+) (sha256:[0-9a-f]{64}) \d+\n(.*)\z/ms
        or die 'bad_staples: not a staple of one answer';
    (my $tampered = $answer) =~ s/^(Timestamp: \d*)(\d)$/$1 . (($2 + 1) % 10)/me
        or die 'bad_staples: no Timestamp line';
    my $fake = SKTimeline::ed25519_key($d, 'fakemirror');
    (my $unsigned = $answer) =~ s/Signature: [A-Za-z0-9_-]{86}\n\z//;
    my $resigned = $unsigned . 'Signature: '
        . SKTimeline::b64url(SKMirror::ed_sign($fake, $unsigned)) . "\n";
    my $fakefpr = 'sha256:' . unpack('H*', sha256(SKTimeline::ossl('pkey',
        '-in', $fake, '-pubout', '-outform', 'DER')));
    return { fpr => $fpr, fakefpr => $fakefpr,
        tampered => one_staple($name, $fpr, $tampered),
        untrusted => one_staple($name, $fakefpr, $resigned) };
}

sub stop_world {
    my ($w) = @_;
    stop_daemon($w->{mirror}{pid});
    stop_daemon($_->{pid}) for values %{$w->{timelines}};
}

1;
