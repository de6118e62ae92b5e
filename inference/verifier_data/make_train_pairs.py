#!/usr/bin/env python3
"""Deterministically generate adversarial_train_pairs.jsonl.

Pairs for training a semantic-cache verifier (pair classifier):
  duplicate=true  : two different hand-written paraphrase templates filled with the SAME slot values
  duplicate=false : near-misses - the same or a different template with exactly ONE slot changed
                    (negation, antonym, direction, entity, number, date, unit, audience, product,
                     place, time, comparative, quantifier)

The topics / nouns / entities / numbers are deliberately disjoint from the evaluation workload
(adversarial_workload.jsonl: banking, e-commerce, travel, health, devops, cooking, HR, education,
telecom, insurance).  Domains here: gardening, pets, cycling/vehicles, home appliances & smart home,
fitness, music, languages, photography, gaming, outdoors, real estate/rentals, astronomy, crafts,
municipal services.  If the workload file is present, the script checks the vocabulary overlap
and fails on any shared number or shared slot-filler word.
"""
import itertools
import json
import random
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

OUT = Path(__file__).resolve().parent
N_TRUE, N_FALSE = 1200, 1800
SEED = 7


def S(cat, *opts, cross=None):
    """A slot: category of a change in this slot, list of options.
    Options are str or dict; dict options may carry '_key' (frozenset): for direction slots,
    two options with the same _key are swaps of each other (category = cat), otherwise the
    change is labelled `cross`."""
    return {"cat": cat, "opts": list(opts), "cross": cross}


def D(a, b):  # direction option helper
    return {"a": a, "b": b, "_key": frozenset((a, b))}


F = []  # families

# ---------------------------------------------------------------- gardening
F.append(dict(dom="gardening", tpl=[
    "When is the best season to plant {crop} in {reg}?",
    "What's the ideal planting window for {crop} in {reg}?",
    "In {reg}, when should I plant {crop}?",
    "{crop} planting season in {reg}?",
    "when do gardeners in {reg} usually put {crop} in the ground"],
    slots=dict(crop=S("entity", "tomatoes", "garlic", "potatoes", "sunflowers", "strawberries", "pumpkins"),
               reg=S("place", "Arizona", "Minnesota", "Scotland", "Queensland"))))
F.append(dict(dom="gardening", tpl=[
    "How often should I water a {p} {sea[a]}?",
    "How frequently does a {p} need watering {sea[a]}?",
    "{sea[b]}, how often do you water a {p}?",
    "{p} watering frequency {sea[a]}?"],
    slots=dict(p=S("entity", "cactus", "fiddle-leaf fig", "orchid", "snake plant", "monstera", "peace lily"),
               sea=S("time", {"a": "during summer", "b": "In summer"},
                     {"a": "during winter", "b": "In winter"}))))
F.append(dict(dom="gardening", tpl=[
    "Should I prune {q} of my {pl} canes in autumn?",
    "Do I need to cut back {q} of my {pl} canes in the fall?",
    "{pl} canes: should I prune {q} of them in autumn?",
    "should {q} of my {pl} canes be cut back in the fall"],
    slots=dict(q=S("quantifier", "all", "some", "most"),
               pl=S("entity", "raspberry", "blackberry", "rose"))))
F.append(dict(dom="gardening", tpl=[
    "Which houseplants are {s[a]} {pet}?",
    "What indoor plants are {s[b]} {pet}?",
    "List houseplants that are {s[a]} {pet}.",
    "houseplants {s[a]} {pet} - which ones?"],
    slots=dict(s=S("negation", {"a": "toxic to", "b": "poisonous for"},
                   {"a": "non-toxic to", "b": "not poisonous for"}),
               pet=S("entity", "cats", "dogs", "parrots", "rabbits"))))
F.append(dict(dom="gardening", tpl=[
    "Which paints dry {c[a]} than {ref}?",
    "What kinds of paint have a {c[b]} drying time than {ref}?",
    "Paints that dry {c[a]} than {ref} - examples?",
    "which paint types dry {c[a]} compared to {ref}"],
    slots=dict(c=S("comparative", {"a": "faster", "b": "shorter"}, {"a": "slower", "b": "longer"}),
               ref=S("entity", "acrylic", "oil paint", "watercolor", "gouache"))))

# ---------------------------------------------------------------- pets
F.append(dict(dom="pets", tpl=[
    "How many times a day should I feed a {n}-week-old {pet}?",
    "How often should a {n}-week-old {pet} eat each day?",
    "Feeding frequency for a {pet} that is {n} weeks old?",
    "My {pet} is {n} weeks old. How many meals a day does it need?",
    "how many daily meals does a {n} week old {pet} need"],
    slots=dict(n=S("number", "7", "8", "16", "20"),
               pet=S("entity", "puppy", "kitten"))))
F.append(dict(dom="pets", tpl=[
    "Why is my {pet} sleeping {c} than usual?",
    "My {pet} has been sleeping {c} than it used to - why?",
    "What causes a {pet} to sleep {c} than usual?",
    "{pet} sleeping {c} than usual: what's going on?"],
    slots=dict(c=S("comparative", "more", "less"),
               pet=S("entity", "dog", "cat", "rabbit", "hamster"))))
F.append(dict(dom="pets", tpl=[
    "How often should I groom a {b}?",
    "How frequently does a {b} need grooming?",
    "How often does a {b} need to see a groomer?",
    "{b} grooming frequency?"],
    slots=dict(b=S("entity", "poodle", "husky", "golden retriever", "dachshund", "shih tzu", "schnauzer"))))
F.append(dict(dom="pets", tpl=[
    "Which fish {n[a]} share an aquarium with a {f}?",
    "What tank mates {n[b]} a {f}?",
    "Fish that {n[c]} a {f} in the same tank - which ones?",
    "which species {n[a]} live in a tank with a {f}"],
    slots=dict(n=S("negation", {"a": "can", "b": "are compatible with", "c": "get along with"},
                   {"a": "can't", "b": "aren't compatible with", "c": "don't get along with"}),
               f=S("entity", "betta", "goldfish", "angelfish", "pufferfish"))))
F.append(dict(dom="pets", tpl=[
    "Which dog breeds shed {c} than a {ref}?",
    "What breeds of dog shed {c} than {ref}s do?",
    "Dog breeds that shed {c} than a {ref} - list?",
    "which dogs shed {c} than a {ref}"],
    slots=dict(c=S("comparative", "more", "less"),
               ref=S("entity", "labrador", "beagle", "border collie"))))

# ---------------------------------------------------------------- cycling / vehicles
F.append(dict(dom="vehicles", tpl=[
    "What's the recommended tire pressure for a {veh} in {u}?",
    "In {u}, what tire pressure should a {veh} run?",
    "Recommended {veh} tire pressure, measured in {u}?",
    "How much air should I put in {veh} tires, in {u}?"],
    slots=dict(veh=S("product", "motorcycle", "road bike", "mountain bike", "minivan"),
               u=S("unit", "PSI", "bar", "kPa"))))
F.append(dict(dom="vehicles", tpl=[
    "How do I {v} the chain on my {bk}?",
    "What's the right way to {v} a {bk} chain?",
    "Steps to {v} the chain of a {bk}?",
    "I need to {v} my {bk}'s chain - how?"],
    slots=dict(v=S("antonym", "tighten", "loosen"),
               bk=S("product", "single-speed bike", "BMX bike", "motorcycle"))))
F.append(dict(dom="vehicles", tpl=[
    "What's the maximum velocity of a {b} in {u}?",
    "How fast can a {b} go, in {u}?",
    "{b} max velocity, measured in {u}?",
    "In {u}, how fast does a typical {b} go?"],
    slots=dict(b=S("entity", "sailboat", "jet ski", "catamaran", "sea kayak"),
               u=S("unit", "knots", "mph"))))

# ---------------------------------------------------------------- home appliances / smart home
F.append(dict(dom="appliances", tpl=[
    "Why is my {app} too {t}?",
    "My {app} keeps getting too {t} - what could be causing it?",
    "What makes a {app} run too {t}?",
    "{app} is too {t}, what's wrong with it?"],
    slots=dict(t=S("antonym", "cold", "warm"),
               app=S("entity", "refrigerator", "chest freezer", "wine cooler"))))
F.append(dict(dom="appliances", tpl=[
    "How do I replace the {part} on my {app}?",
    "What's involved in replacing the {part} of a {app}?",
    "Steps for swapping out the {part} in a {app}?",
    "{app} {part} replacement - how do I do it myself?"],
    slots=dict(part=S("entity", "door gasket", "drain pump", "heating element"),
               app=S("product", "dishwasher", "washer"))))
F.append(dict(dom="appliances", tpl=[
    "Set the {z} thermostat to {n}.",
    "Please change the {z} thermostat to {n}.",
    "Adjust the thermostat in the {z} so it's at {n}.",
    "{z} thermostat to {n} please"],
    slots=dict(z=S("place", "bedroom", "den", "basement"),
               n=S("number", "68", "86", "67", "76"))))
F.append(dict(dom="appliances", tpl=[
    "Switch off {q} in the {r}.",
    "Shut off {q} in the {r}, please.",
    "Power down {q} in the {r}.",
    "Can you switch {q} in the {r} off?"],
    slots=dict(q=S("quantifier", "all the lights", "just one of the lights", "every other light"),
               r=S("place", "kitchen", "garage", "nursery", "hallway"))))
F.append(dict(dom="appliances", tpl=[
    "{v[a]} the {room} lights.",
    "Please {v[l]} the lights in the {room}.",
    "Make the {room} lights {v[b]}.",
    "Can you make the lights in the {room} {v[b]}?"],
    slots=dict(v=S("antonym", {"a": "Brighten", "l": "brighten", "b": "brighter"},
                   {"a": "Dim", "l": "dim", "b": "dimmer"}),
               room=S("place", "bedroom", "porch", "sunroom", "attic"))))
F.append(dict(dom="appliances", tpl=[
    "Can {fab} go in the tumble dryer?",
    "Is it okay to put {fab} in the tumble dryer?",
    "Can I tumble dry {fab}?",
    "is {fab} suitable for the tumble dryer"],
    neg_tpl=[
    "Why can't {fab} go in the tumble dryer?",
    "Why is it not okay to put {fab} in the tumble dryer?",
    "Why can't I tumble dry {fab}?",
    "why isn't {fab} suitable for the tumble dryer"],
    slots=dict(fab=S("entity", "wool", "silk", "linen", "spandex", "cashmere"))))
F.append(dict(dom="appliances", tpl=[
    "How do I {v} my {it}?",
    "What's the best way to {v} my {it}?",
    "{it}: how do I {v} it?",
    "Tips to {v} my {it}?"],
    slots=dict(v=S("antonym", "inflate", "deflate"),
               it=S("entity", "air mattress", "inflatable paddleboard", "pool float"))))

# ---------------------------------------------------------------- fitness
F.append(dict(dom="fitness", tpl=[
    "What stretches should I do {w[a]} {sp}?",
    "Which {w[b]} stretches are good for {sp}?",
    "Recommend some {w[b]} stretches for {sp}.",
    "{sp} {w[b]} routine: which stretches?"],
    slots=dict(w=S("antonym", {"a": "to warm up before", "b": "warm-up"},
                   {"a": "to cool down after", "b": "cool-down"}),
               sp=S("entity", "tennis", "rowing", "rock climbing", "basketball", "swimming"))))
F.append(dict(dom="fitness", tpl=[
    "How do I {v} my {g} membership?",
    "What do I have to do to {v} my {g} membership?",
    "Is there a way to {v} my membership at {g}? How?",
    "{v} {g} membership - what are the steps?"],
    slots=dict(v=S("antonym", "pause", "resume"),
               g=S("entity", "Planet Fitness", "Anytime Fitness", "Gold's Gym"))))
F.append(dict(dom="fitness", tpl=[
    "How many calories did I burn {act} {t[a]}?",
    "What's my calorie burn from {act} for {t[b]}?",
    "Show the calories I burned {act} {t[a]}.",
    "calories burned {act} {t[a]} - total?"],
    slots=dict(act=S("entity", "cycling", "swimming", "hiking"),
               t=S("time", {"a": "yesterday", "b": "yesterday"},
                   {"a": "this week", "b": "this week"},
                   {"a": "last week", "b": "last week"}))))
F.append(dict(dom="fitness", tpl=[
    "Suggest a weekly workout routine for {aud}.",
    "What's a good weekly exercise program for {aud}?",
    "Can you put together a weekly workout regimen for {aud}?",
    "weekly training routine for {aud} - ideas?"],
    slots=dict(aud=S("audience", "new moms", "wheelchair users", "sixty-somethings", "beginner powerlifters"))))

# ---------------------------------------------------------------- music / languages / media
F.append(dict(dom="music", tpl=[
    "Which {ins} is best for {aud}?",
    "What's a good {ins} for {aud}?",
    "Recommend a {ins} suitable for {aud}.",
    "{ins} recommendations for {aud}?"],
    slots=dict(ins=S("product", "acoustic guitar", "digital piano", "ukulele", "violin"),
               aud=S("audience", "beginners", "left-handed players", "advanced players"))))
F.append(dict(dom="music", tpl=[
    "How do I move my {data} from {d[a]} to {d[b]}?",
    "What's the easiest way to get my {data} from {d[a]} over to {d[b]}?",
    "Migrating my {data} from {d[a]} to {d[b]} - how?",
    "how do i export my {data} from {d[a]} and import them into {d[b]}"],
    slots=dict(data=S("entity", "playlists", "liked songs", "saved podcasts"),
               d=S("direction", D("Spotify", "Tidal"), D("Tidal", "Spotify"),
                   D("Deezer", "YouTube Music"), D("YouTube Music", "Deezer"), cross="entity"))))
F.append(dict(dom="music", tpl=[
    "What are the most-streamed {g} albums {t}?",
    "Which {g} albums were streamed the most {t}?",
    "Most-streamed {g} albums {t}?",
    "List the {g} albums with the most streams {t}."],
    slots=dict(g=S("entity", "jazz", "K-pop", "country", "reggae"),
               t=S("time", "this week", "last week"))))
F.append(dict(dom="music", tpl=[
    "Get rid of {q} in my {pl} playlist.",
    "Take {q} off my {pl} playlist.",
    "Can you drop {q} from the {pl} playlist?",
    "{pl} playlist: take {q} out, please."],
    slots=dict(q=S("quantifier", "every song", "the first song", "the last song"),
               pl=S("entity", "workout", "road trip", "sleep", "study"))))
F.append(dict(dom="music", tpl=[
    "How do I {v} my microphone on {app}?",
    "How can I {v} my mic during a {app} call?",
    "{app}: how to {v} the microphone?",
    "i need to {v} my mic in {app}, how"],
    slots=dict(v=S("antonym", "mute", "unmute"),
               app=S("product", "Zoom", "Discord", "Microsoft Teams", "Google Meet"))))
F.append(dict(dom="languages", tpl=[
    "What's the hardest part of learning {d[b]} as a native {d[a]} speaker?",
    "For a native {d[a]} speaker, what's most difficult about learning {d[b]}?",
    "I'm a native {d[a]} speaker learning {d[b]} - what will I find hardest?",
    "biggest challenges learning {d[b]} when your mother tongue is {d[a]}"],
    slots=dict(d=S("direction", D("Dutch", "Korean"), D("Korean", "Dutch"),
                   D("Polish", "Portuguese"), D("Portuguese", "Polish"),
                   D("Swahili", "Japanese"), D("Japanese", "Swahili"), cross="entity"))))
F.append(dict(dom="media", tpl=[
    "How do I convert a {d[a]} to a {d[b]}?",
    "{d[a]} to {d[b]} conversion - how do I do it?",
    "I need to save a {d[a]} as a {d[b]}. How?",
    "what's the simplest way to change a {d[a]} into a {d[b]}"],
    slots=dict(d=S("direction", D("PDF", "DOCX"), D("DOCX", "PDF"), D("PNG", "JPEG"), D("JPEG", "PNG"),
                   D("MP4", "GIF"), D("GIF", "MP4"), cross="entity"))))

# ---------------------------------------------------------------- photography / gaming / gadgets
F.append(dict(dom="photography", tpl=[
    "What sensor size does the {cam} have?",
    "How large is the image sensor in the {cam}?",
    "{cam} sensor size?",
    "Tell me the {cam}'s sensor size."],
    slots=dict(cam=S("product", "Sony A7 IV", "Fujifilm X-T5", "Canon EOS R7", "Canon EOS R8", "Nikon Z50", "Nikon Zf"))))
F.append(dict(dom="gaming", tpl=[
    "How do I factory reset a {c} controller?",
    "What's the way to reset my {c} controller to factory settings?",
    "{c} controller factory reset - how?",
    "Steps to restore a {c} controller to its factory defaults?"],
    slots=dict(c=S("product", "PS5 DualSense", "Xbox Elite", "Nintendo Joy-Con", "Steam Controller"))))
F.append(dict(dom="gaming", tpl=[
    "Which {con} games {n[a]} couch co-op?",
    "What {con} titles {n[b]} couch co-op?",
    "List {con} games {n[c]} couch co-op mode.",
    "{con} games that {n[a]} couch co-op - which ones?"],
    slots=dict(n=S("negation", {"a": "include", "b": "let you play", "c": "with"},
                   {"a": "don't include", "b": "don't let you play", "c": "without"}),
               con=S("product", "PS5", "Xbox Series X", "Nintendo Switch"))))
F.append(dict(dom="gadgets", tpl=[
    "How many ebooks fit on the {k}?",
    "What's the maximum number of ebooks the {k} can store?",
    "{k}: how many ebooks can it store?",
    "how many ebooks can a {k} hold"],
    slots=dict(k=S("product", "Kindle Paperwhite", "Kindle Oasis", "Kobo Clara", "Kobo Libra", "Kindle Scribe"))))

# ---------------------------------------------------------------- outdoors / geography / astronomy
F.append(dict(dom="outdoors", tpl=[
    "What are the best hiking trails near {c} {lvl[a]}?",
    "Which trails near {c} are worth hiking {lvl[a]}?",
    "Recommend some good hikes in the area around {c} {lvl[a]}.",
    "top hiking spots around {c} {lvl[a]}?"],
    slots=dict(c=S("place", "Salt Lake City", "Asheville", "Boulder", "Queenstown", "Chamonix"),
               lvl=S("audience", {"a": "for beginners"}, {"a": "for experienced hikers"}))))
F.append(dict(dom="outdoors", tpl=[
    "How much does a fishing license cost in {s} {res}?",
    "What's the price of a {s} fishing license {res}?",
    "{s} fishing license fee {res}?",
    "If I want to fish in {s}, how much is the license {res}?"],
    slots=dict(s=S("place", "Montana", "Oregon", "Maine", "Vermont"),
               res=S("audience", "for residents", "for non-residents"))))
F.append(dict(dom="geography", tpl=[
    "How tall is {pk} in {u}?",
    "What's the elevation of {pk} in {u}?",
    "{pk} height in {u}?",
    "In {u}, how high is {pk}?"],
    slots=dict(pk=S("place", "Mount Rainier", "Kilimanjaro", "Mont Blanc", "Denali", "Aconcagua"),
               u=S("unit", "feet", "meters"))))
F.append(dict(dom="geography", tpl=[
    "If it's {h} in {d[a]}, what time is it in {d[b]}?",
    "When it's {h} in {d[a]}, what time will it be in {d[b]}?",
    "{h} {d[a]} time is what time in {d[b]}?",
    "convert {h} {d[a]} time to {d[b]} time"],
    slots=dict(h=S("time", "7 am", "8 am", "7 pm", "8 pm"),
               d=S("direction", D("Tokyo", "Denver"), D("Denver", "Tokyo"),
                   D("Nairobi", "Auckland"), D("Auckland", "Nairobi"), cross="place"))))
F.append(dict(dom="geography", tpl=[
    "Convert {n} {d[a]} to {d[b]}.",
    "How many {d[b]} is {n} {d[a]}?",
    "{n} {d[a]} in {d[b]}?",
    "If I have {n} {d[a]}, how many {d[b]} is that?"],
    slots=dict(n=S("number", "35", "45", "120", "350"),
               d=S("direction", D("gallons", "liters"), D("liters", "gallons"),
                   D("acres", "hectares"), D("hectares", "acres"), cross="unit"))))
F.append(dict(dom="astronomy", tpl=[
    "Which planets are {c} the sun than {p}?",
    "What planets orbit {c} the sun than {p} does?",
    "List the planets {c} the sun than {p}.",
    "which planets lie {c} the sun than {p}"],
    slots=dict(c=S("comparative", "closer to", "farther from"),
               p=S("entity", "Earth", "Mars", "Jupiter", "Saturn"))))

# ---------------------------------------------------------------- real estate / home improvement
F.append(dict(dom="real_estate", tpl=[
    "What's the average rent for a {sz} apartment in {c}?",
    "How much does a {sz} apartment typically rent for in {c}?",
    "Average {sz} rent in {c}?",
    "In {c}, what's the typical rent for a {sz} apartment?"],
    slots=dict(sz=S("number", "one-bedroom", "two-bedroom", "three-bedroom"),
               c=S("place", "Portland", "Nashville", "Pittsburgh", "Minneapolis"))))
F.append(dict(dom="real_estate", tpl=[
    "Show me apartments with rent {c[a]} ${n}.",
    "Which apartments rent for {c[b]} ${n}?",
    "List rentals going for {c[b]} ${n}.",
    "apartments with rent {c[a]} ${n} - what's on the market?"],
    slots=dict(c=S("comparative", {"a": "below", "b": "less than"}, {"a": "above", "b": "more than"}),
               n=S("number", "1,650", "2,200", "1,750"))))
F.append(dict(dom="home_improvement", tpl=[
    "How many {tile[a]} tiles do I need for a {n} square foot bathroom floor?",
    "I'm tiling a {n} sq ft bathroom floor with {tile[a]} tiles. How many should I buy?",
    "Number of {tile[a]} tiles needed to tile {n} square feet of bathroom floor?",
    "bathroom floor is {n} square feet - how many {tile[b]} tiles will that take"],
    slots=dict(n=S("number", "35", "45", "70", "120"),
               tile=S("number", {"a": "16-inch", "b": "16 inch"}, {"a": "18-inch", "b": "18 inch"}))))
F.append(dict(dom="home_improvement", tpl=[
    "How many {u} will a gallon of {pt} coat?",
    "What area in {u} can one gallon of {pt} coat?",
    "One gallon of {pt} coats how many {u}?",
    "gallon of {pt} - how many {u} does it coat"],
    slots=dict(u=S("unit", "square feet", "square meters"),
               pt=S("entity", "interior latex paint", "exterior stain", "primer"))))
F.append(dict(dom="home_furnishing", tpl=[
    "What are the dimensions of a {m} mattress in {u}?",
    "How big is a {m} mattress, in {u}?",
    "{m} mattress size in {u}?",
    "Give me the {m} mattress measurements in {u}."],
    slots=dict(m=S("product", "king-size", "queen-size", "twin XL", "full-size"),
               u=S("unit", "inches", "centimeters"))))
F.append(dict(dom="home_entertainment", tpl=[
    "How far should I sit from a {n}-inch TV?",
    "How far back should seating be for a {n}-inch television?",
    "Best couch placement for a {n} inch TV - how far away?",
    "I have a {n}-inch TV - how far away should my couch be?"],
    slots=dict(n=S("number", "43", "55", "65", "75", "85"))))

# ---------------------------------------------------------------- events / municipal services / scheduling
F.append(dict(dom="events", tpl=[
    "Get me {n[d]} seats for {day}'s {sp} game.",
    "I'd like {n[w]} seats at the {sp} game this {day}.",
    "Can you grab {n[d]} seats at the {sp} game on {day}?",
    "{n[w]} seats for {day}'s {sp} game, please."],
    slots=dict(n=S("number", {"d": "7", "w": "seven"}, {"d": "8", "w": "eight"}, {"d": "17", "w": "seventeen"}),
               sp=S("entity", "hockey", "baseball", "lacrosse"),
               day=S("time", "Saturday", "Sunday"))))
F.append(dict(dom="municipal", tpl=[
    "Is there {bin} collection on {dt[a]}?",
    "Will {bin} be picked up on {dt[a]}?",
    "Does {bin} get collected on {dt[b]}?",
    "{bin} pickup on {dt[a]}: is it happening?"],
    slots=dict(bin=S("entity", "garbage", "recycling", "yard waste"),
               dt=S("date", {"a": "November 7", "b": "Nov 7"}, {"a": "November 17", "b": "Nov 17"},
                    {"a": "November 27", "b": "Nov 27"}))))
F.append(dict(dom="municipal", tpl=[
    "Is the {fac} open on {dt[a]}?",
    "Will the {fac} be open on {dt[a]}?",
    "{fac} open on {dt[b]}?",
    "Can I go to the {fac} on {dt[a]}, or will it be shut?"],
    slots=dict(fac=S("entity", "recycling center", "public pool", "city zoo", "botanical garden"),
               dt=S("date", {"a": "July 7", "b": "Jul 7"}, {"a": "July 17", "b": "Jul 17"},
                    {"a": "July 27", "b": "Jul 27"}, {"a": "August 8", "b": "Aug 8"},
                    {"a": "August 18", "b": "Aug 18"}))))
F.append(dict(dom="scheduling", tpl=[
    "Can you move my {ap} to {dt[a]}?",
    "Please shift my {ap} to {dt[a]}.",
    "I need my {ap} changed to {dt[b]}.",
    "Could my {ap} be pushed to {dt[a]} instead?"],
    slots=dict(ap=S("entity", "grooming appointment", "piano lesson", "haircut"),
               dt=S("date", {"a": "October 8", "b": "the 8th of October"},
                    {"a": "October 18", "b": "the 18th of October"},
                    {"a": "October 28", "b": "the 28th of October"},
                    {"a": "November 8", "b": "the 8th of November"}))))
F.append(dict(dom="budgeting", tpl=[
    "How much did I spend on {cat} {t[a]}?",
    "What was my total {cat} spending in {t[b]}?",
    "Show my {cat} expenses for {t[b]}.",
    "{cat} spending {t[a]}: how much?"],
    slots=dict(cat=S("entity", "groceries", "takeout", "gasoline"),
               t=S("time", {"a": "this quarter", "b": "this quarter"},
                   {"a": "last quarter", "b": "the previous quarter"}))))
F.append(dict(dom="gifts", tpl=[
    "What are good gift ideas for {aud} who love {hob}?",
    "Gift suggestions for {aud} into {hob}?",
    "I'm looking for presents for {aud} who enjoy {hob}. Ideas?",
    "What should I buy {aud} who are passionate about {hob}?"],
    slots=dict(aud=S("audience", "grandparents", "newlyweds", "coworkers", "ten-year-olds"),
               hob=S("entity", "camping", "knitting", "astronomy", "woodworking"))))


# ====================================================================== generation
AN_RE = re.compile(r"\b([aA]) (?!one|uk|uni|use|eu)([aeiouAEIOU])")


def render(tpl, slots_vals):
    ctx = {}
    for k, v in slots_vals.items():
        ctx[k] = v
    s = tpl.format(**ctx)
    s = re.sub(r"\s+", " ", s).strip()
    s = s.replace(" ?", "?").replace(" .", ".").replace(" ,", ",")
    s = AN_RE.sub(lambda m: m.group(1)[0] + "n " + m.group(2), s).replace("a MP4", "an MP4")
    if tpl.startswith("{"):
        s = s[0].upper() + s[1:]
    return s


def option_label(slot, i, j):
    oi, oj = slot["opts"][i], slot["opts"][j]
    if isinstance(oi, dict) and "_key" in oi:
        return slot["cat"] if oi["_key"] == oj["_key"] else slot["cross"]
    return slot["cat"]


def family_candidates(fam):
    names = list(fam["slots"])
    slots = [fam["slots"][n] for n in names]
    intents = list(itertools.product(*[range(len(s["opts"])) for s in slots]))

    def texts(intent, neg=False):
        vals = {n: s["opts"][i] for n, s, i in zip(names, slots, intent)}
        return vals

    # "neg_tpl" families: a hidden negation slot chooses the template set
    tsets = [fam["tpl"]] + ([fam["neg_tpl"]] if "neg_tpl" in fam else [])

    def rend(intent, polarity, ti):
        return render(tsets[polarity][ti], texts(intent))

    true, false = [], []
    nt = len(fam["tpl"])
    for pol in range(len(tsets)):
        for it in intents:
            for ti, tj in itertools.combinations(range(nt), 2):
                a, b = rend(it, pol, ti), rend(it, pol, tj)
                if a != b:
                    true.append((a, b, "paraphrase"))
    # near-misses: exactly one slot differs (same polarity) ...
    for pol in range(len(tsets)):
        for x, y in itertools.combinations(intents, 2):
            diff = [k for k in range(len(names)) if x[k] != y[k]]
            if len(diff) != 1:
                continue
            k = diff[0]
            lab = option_label(slots[k], x[k], y[k])
            for ti in range(nt):
                for tj in range(nt):
                    false.append((rend(x, pol, ti), rend(y, pol, tj), lab, ti == tj))
    # ... or only the polarity differs
    if len(tsets) == 2:
        for it in intents:
            for ti in range(nt):
                for tj in range(nt):
                    false.append((rend(it, 0, ti), rend(it, 1, tj), "negation", ti == tj))
    return true, false


def main():
    rng = random.Random(SEED)
    fam_true, fam_false = [], []
    for fam in F:
        t, f = family_candidates(fam)
        fam_true.append(t)
        fam_false.append(f)
    nf = len(F)

    seen = set()
    out = []
    cat_counts = Counter()

    def add(a, b, dup, cat):
        key = frozenset((a, b))
        if a == b or key in seen:
            return False
        seen.add(key)
        if rng.random() < 0.5:
            a, b = b, a
        out.append({"a": a, "b": b, "duplicate": dup})
        cat_counts[(dup, cat)] += 1
        return True

    # --- positives: round-robin over families so every family contributes evenly
    pools = [rng.sample(t, len(t)) for t in fam_true]
    n = 0
    while n < N_TRUE:
        progressed = False
        for p in pools:
            while p and n < N_TRUE:
                a, b, c = p.pop()
                if add(a, b, True, c):
                    n += 1
                    progressed = True
                    break
        if not progressed:
            break

    # --- negatives: round-robin over categories (balanced), within a category round-robin over
    #     families, alternating same-template (hardest) and cross-template near-misses
    pools = defaultdict(lambda: defaultdict(lambda: {True: [], False: []}))
    for fi, f in enumerate(fam_false):
        for a, b, lab, same in f:
            pools[lab][fi][same].append((a, b, lab))
    cats = sorted(pools)
    for lab in cats:
        for fi in pools[lab]:
            for sm in (True, False):
                rng.shuffle(pools[lab][fi][sm])
    fam_turn = Counter()
    n = 0
    while n < N_FALSE:
        progressed = False
        for lab in cats:
            if n >= N_FALSE:
                break
            fis = sorted(pools[lab])
            for _ in range(len(fis)):
                t = fam_turn[lab]
                fam_turn[lab] += 1
                fi = fis[t % len(fis)]
                same = (t // len(fis)) % 2 == 0
                got = False
                for sm in (same, not same):
                    while pools[lab][fi][sm]:
                        a, b, c = pools[lab][fi][sm].pop()
                        if add(a, b, False, c):
                            n += 1
                            got = progressed = True
                            break
                    if got:
                        break
                if got:
                    break
        if not progressed:
            break

    rng.shuffle(out)
    with open(OUT / "adversarial_train_pairs.jsonl", "w") as fh:
        for r in out:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")

    stats = {
        "families": nf,
        "pairs": len(out),
        "duplicate_true": sum(r["duplicate"] for r in out),
        "duplicate_false": sum(not r["duplicate"] for r in out),
        "negatives_by_category": dict(sorted((c, v) for (d, c), v in cat_counts.items() if not d)),
    }
    with open(OUT / "adversarial_train_pairs_meta.json", "w") as fh:
        json.dump(stats, fh, indent=1)
    print(json.dumps(stats, indent=1))
    check_disjoint()


# ====================================================================== disjointness check
ALLOW = set("""
a an the and or of in on at to for from with without by into over under above below than more less
is are was were be been do does did can could should will would have has had it its it's this that
there their they them i i'd i'm me my you your what what's which when where why who how if so
please tell show list give get need want like way steps step process procedure best good right much
many long far big time day each every all any some one just only least exactly not don't can't isn't
no make set use find up out off down explain walk through possible going happens instead look
looking suggestions ideas recommend recommendations suitable available usually typical common
should worry fix change go run see take taken keep total per number types kinds kind size
open new shut switch convert s
before after as too old ones getting examples tips suggest th am last next maximum daily cost replacement
""".split())


def tokens(text):
    return [t.lower() for t in re.findall(r"[A-Za-z][A-Za-z'/-]*", text)]


def numbers(text):
    return set(re.findall(r"\b\d[\d,.]*\d\b|\b\d\b", text))


def check_disjoint():
    wl = OUT.parents[1] / "benchmarks" / "data" / "adversarial_workload.jsonl"
    if not wl.exists():
        print("workload not found; skipping disjointness check")
        return
    w_rows = [json.loads(l) for l in open(wl)]
    w_tok, w_num = set(), set()
    for r in w_rows:
        w_tok.update(tokens(r["text"]))
        w_num.update(numbers(r["text"]))
    # slot fillers (the key content words) must be strictly disjoint
    bad = []
    for fam in F:
        for sname, slot in fam["slots"].items():
            for o in slot["opts"]:
                vals = [v for k, v in o.items() if k != "_key"] if isinstance(o, dict) else [o]
                for v in vals:
                    for t in tokens(v):
                        if t in w_tok and t not in ALLOW:
                            bad.append((sname, v, t))
    t_tok, t_num = Counter(), set()
    for l in open(OUT / "adversarial_train_pairs.jsonl"):
        r = json.loads(l)
        for s in (r["a"], r["b"]):
            t_tok.update(tokens(s))
            t_num |= numbers(s)
    shared = sorted(t for t in t_tok if t in w_tok and t not in ALLOW)
    shared_num = sorted(t_num & w_num)
    print("slot-filler overlaps:", bad)
    print("other shared non-function words:", shared)
    print("shared numbers:", shared_num)
    if bad or shared_num:
        sys.exit("vocabulary overlap with evaluation workload")


if __name__ == "__main__":
    main()
